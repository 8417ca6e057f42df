"""The project as it ships: the package layout, the built sdist and wheel installed as users get them, and
the MCP registry manifest (server.json)."""
