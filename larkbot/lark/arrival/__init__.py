"""How events arrive and are believed: the webhook's verification chain, decryption, the long
connection, and Lark's message JSON turned into an `InboundMessage`."""
