"""``finmcp-eval view``: a local web app to look at what agents did (issue 18).

- :mod:`evaluator.viewer.source` opens a trace store read-only (SQLite file or ``postgresql://`` URL);
- :mod:`evaluator.viewer.queries` holds every SQL query (keyset pages, one sample, live increments);
- :mod:`evaluator.viewer.diff` puts a sample's calls next to its reference with the evaluator's metrics;
- :mod:`evaluator.viewer.app` is the Starlette app (JSON API, the page and its static assets);
- :mod:`evaluator.viewer.serve` is the command line: flags, binding on loopback, the ready line.

The page is vanilla JS and CSS shipped in ``static/`` (no CDN, no external fonts or scripts).
"""
