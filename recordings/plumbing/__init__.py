"""Plumbing that several rooms share (server, proxy, evaluator): small modules, one job each.

Nothing here touches storage or imports the server, proxy or evaluator; they import it.

- :mod:`recordings.plumbing.seeding`: stable seed derivation (blake2b over the parts);
- :mod:`recordings.plumbing.protocol`: MCP protocol versions and their eras (handshake / stateless);
- :mod:`recordings.plumbing.sse`: the incremental Server-Sent Events parser;
- :mod:`recordings.plumbing.http1`: strict HTTP/1.1 framing, sans-IO (heads, body delimiting, chunks);
- :mod:`recordings.plumbing.listener`: the Host/Origin/token/body policy of an HTTP listener and socket binding;
- :mod:`recordings.plumbing.launch`: the ready line and launching a finmcp process on loopback;
- :mod:`recordings.plumbing.terminal`: untrusted text made safe to print (control characters shown).
"""
