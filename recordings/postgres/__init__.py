"""The shared PostgreSQL trace store: schema, connection and reads (docs/scale.md).

SQLite stays the embedded default. PostgreSQL holds the traces of many proxies: each proxy keeps its
local SQLite file as an outbox and a shipper drains it here, keyed by the proxy's identity
(``origin``) and the row's local id, so a row shipped twice is stored once.
"""
