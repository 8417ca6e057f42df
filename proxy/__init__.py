"""finmcp proxy package."""
