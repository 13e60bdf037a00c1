"""larkbot: a self-hosted AI agent that lives in Lark/Feishu."""

__version__ = "0.1.0"
