"""Scripted models: an OpenAI-compatible endpoint that plays a benchmark's gold plan (``finmcp-eval model``).

:mod:`.plan` decides the next reply from the conversation a request carries (stateless), :mod:`.wire`
reads and writes the OpenAI Chat Completions and Responses formats (JSON and SSE), :mod:`.app` is the
HTTP app and :mod:`.serve` the command line. docs/evaluator.md "Scripted models" describes it.
"""
