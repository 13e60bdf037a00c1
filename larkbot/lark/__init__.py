"""The Lark/Feishu channel: protocol, inbound normalisation, delivery and the serve pipeline."""
