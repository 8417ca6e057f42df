"""Builders for the Qieman tools, one module per family."""
