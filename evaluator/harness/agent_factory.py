"""The agent a run asks for (``--agent oracle|noisy|openai|cmd:…|python:…`` and its flags)."""

from __future__ import annotations

from typing import Any

from finmcp.evaluator.errors import EvalInputError
from finmcp.evaluator.harness.options import AgentOptions


def make_agent(options: AgentOptions) -> Any:
    """The agent of ``options``; an input error for out-of-range limits or a missing LLM endpoint."""
    from finmcp.evaluator.agents import NoiseRates, NoisyAgent, OracleAgent

    if options.retry < 0:
        raise EvalInputError("--retry must be >= 0")
    if options.retry and options.kind != "oracle":
        raise EvalInputError("--retry is a policy of --agent oracle")
    if options.kind == "oracle":
        return OracleAgent(retry=options.retry)
    if options.kind == "noisy":
        return NoisyAgent(NoiseRates.parse(options.noise), options.seed)
    if options.kind in ("cmd", "python"):
        return _external(options)
    from finmcp.evaluator.agents.openai_agent import OpenAIAgent
    from finmcp.evaluator.llm import Endpoint, LlmError

    if options.max_calls < 1 or (options.max_steps is not None and options.max_steps < 1):
        raise EvalInputError("--max-calls and --max-steps must be >= 1")
    if options.top_k is not None and options.top_k < 1:
        raise EvalInputError("--top-k must be >= 1")
    if options.max_tokens is not None and options.max_tokens < 1:
        raise EvalInputError("--max-tokens must be >= 1")
    try:
        chat = Endpoint.from_args(options, "--agent openai").client(
            temperature=options.temperature, max_tokens=options.max_tokens
        )
    except LlmError as exc:
        raise EvalInputError(str(exc)) from None
    return OpenAIAgent(chat, options.max_calls, options.max_steps, options.top_k, options.inject_tags)


def _external(options: AgentOptions) -> Any:
    """``--agent cmd:…`` or ``--agent python:…`` (:mod:`evaluator.tasks.external`)."""
    from finmcp.evaluator.tasks.external import make_external_agent
    from finmcp.evaluator.tasks.model import Limits

    if options.max_calls < 1 or (options.max_steps is not None and options.max_steps < 1):
        raise EvalInputError("--max-calls and --max-steps must be >= 1")
    if options.top_k is not None and options.top_k < 1:
        raise EvalInputError("--top-k must be >= 1")
    if not options.target:
        raise EvalInputError(f"--agent {options.kind}: needs what to run, e.g. --agent {options.kind}:…")
    limits = Limits(options.max_calls, options.max_steps)
    return make_external_agent(options.kind, options.target, limits, options.top_k, options.task_timeout)
