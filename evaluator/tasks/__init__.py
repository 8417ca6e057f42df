"""Tasks out, answers in: finmcp's benchmarks for agents finmcp does not run itself.

:mod:`evaluator.tasks.model` is the versioned task format (``finmcp-task/1``, with its JSON Schema
``finmcp-task-1.schema.json`` shipped next to it), :mod:`evaluator.tasks.build` makes the tasks of a
run, :mod:`evaluator.tasks.external` runs a program (``--agent cmd:``) or a Python callable
(``--agent python:``) as the harness's agent, and :mod:`evaluator.tasks.cli` holds ``finmcp-eval
tasks`` and ``finmcp-eval answers``.
"""
