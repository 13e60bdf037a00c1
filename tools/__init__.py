"""The tool system: BaseTool, the registry, the executor and the built-in tools."""

from tools.base import BaseTool, ToolResult

__all__ = ["BaseTool", "ToolResult"]
