"""Scoring inputs: the sample model, references and predictions, and their readers.

- :mod:`evaluator.inputs.model` holds calls, turns, references, predictions and their sets;
- :mod:`evaluator.inputs.records` reads JSON / JSONL (optionally gzipped) and shared record fields;
- :mod:`evaluator.inputs.references` reads gold references (finmcp's own format, or dispatches to
  :mod:`evaluator.inputs.finmcp_json` for official FinMCP-Bench JSON and
  :mod:`evaluator.inputs.fintoolbench_jsonl` for FinToolBench questions JSONL);
- :mod:`evaluator.inputs.predictions` reads prediction files (exported JSONL, official FinMCP-Bench,
  FinToolBench results) and :mod:`evaluator.inputs.trace_db` the proxy's trace DB;
- :mod:`evaluator.inputs.pairing` matches every reference with its prediction.

Nothing here knows about shipped benchmarks (:mod:`evaluator.benchmarks`) or the server.
"""
