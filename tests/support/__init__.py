"""Helpers shared by the test rooms: child processes, raw JSON-RPC, polling, trace reads, console scripts.

Fixtures built on them live in ``tests/conftest.py``; import the plain functions as
``from tests.support.rpc import modern_call`` and so on.
"""
