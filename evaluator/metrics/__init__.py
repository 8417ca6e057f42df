"""Metrics: per-sample scores, the official and extended formulas, judges and statistics.

- :mod:`evaluator.metrics.finmcp` (official FinMCP-Bench script, paper EMR) and
  :mod:`evaluator.metrics.fintoolbench` (FinToolBench official and corrected);
- :mod:`evaluator.metrics.extended`, :mod:`evaluator.metrics.matching`, :mod:`evaluator.metrics.argnorm`;
- :mod:`evaluator.metrics.judges` (LLM judge, cache) and :mod:`evaluator.metrics.rule_judge` (offline);
- :mod:`evaluator.metrics.table` (the per-sample score table), :mod:`evaluator.metrics.headline`
  (headline specs), :mod:`evaluator.metrics.stats` (bootstrap, McNemar, pass^k),
  :mod:`evaluator.metrics.compare` (paired comparison of two runs);
- :mod:`evaluator.metrics.options` (the knobs of one evaluation).
"""
