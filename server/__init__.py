"""finmcp server package."""
