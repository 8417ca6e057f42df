"""The agent harness: drive an agent over a benchmark through the logging proxy (``finmcp-eval run``).

- :mod:`evaluator.harness.runner` walks samples, trials and turns and records each sample's outcome;
- :mod:`evaluator.harness.session` builds tagged proxy URLs and issues one step's calls concurrently;
- :mod:`evaluator.harness.mcp_client` is the pooled stateless-era MCP client, over
  :mod:`evaluator.harness.http_pool` (its lean HTTP/1.1 client; the former httpx2 one is
  ``bench/httpx2_pool.py``, the bench's baseline);
- :mod:`evaluator.harness.spawn` starts ``finmcp-server`` + ``finmcp-proxy`` for ``--spawn``;
- :mod:`evaluator.harness.scoring` scores a run from the trace DB; :mod:`evaluator.harness.demo` is
  ``finmcp-eval demo``.
"""
