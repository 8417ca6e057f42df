"""finmcp tool_specs package."""
