"""Grounded answers: the claims of a final answer checked against the sample's tool outputs and the world.

Entry point: :func:`evaluator.grounding.check.check_answer` takes an answer text and the sample's tool
outputs (any source: the harness run state, a trace store's ``answers`` table, a file), returns every
claim with its verdict and evidence. :mod:`evaluator.grounding.metrics` aggregates verdicts over a run
(bootstrap CIs); :mod:`evaluator.grounding.corpus` builds the injected validation corpus.
"""
