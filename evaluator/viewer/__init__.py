"""``finmcp-eval view``: a local web app to look at what agents did (issue 18).

- the trace store (:func:`recordings.trace_store.open_trace_store`, read-only; SQLite file or
  ``postgresql://`` URL) runs every query (:mod:`recordings.trace_pages`: keyset pages, one sample,
  live increments); :mod:`evaluator.viewer.queries` shapes their rows as the API's JSON;
- :mod:`evaluator.viewer.diff` puts a sample's calls next to its reference with the evaluator's metrics;
- :mod:`evaluator.viewer.app` is the Starlette app (JSON API, the page and its static assets);
- :mod:`evaluator.viewer.serve` is the command line: flags, binding on loopback, the ready line.

The page is vanilla JS and CSS shipped in ``static/`` (no CDN, no external fonts or scripts).
"""
