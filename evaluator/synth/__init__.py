"""Dataset synthesis: tool graph, chains, queries, trajectories and dialogues (``finmcp-eval synth``)."""
