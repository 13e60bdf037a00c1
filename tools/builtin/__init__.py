"""Built-in tools: every non-underscore module defines `provide(rt) -> list[BaseTool]`."""
