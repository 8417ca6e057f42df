"""Helpers shared by the test rooms: child processes, raw JSON-RPC, polling, trace reads, console scripts,
scripted upstreams (``raw_upstream``) and a stdio proxy driven by raw lines (``stdio_lines``).

Fixtures built on them live in ``tests/conftest.py``; import the plain functions as
``from tests.support.rpc import modern_call`` and so on.
"""
