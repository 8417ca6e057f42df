"""finmcp evaluator package."""
