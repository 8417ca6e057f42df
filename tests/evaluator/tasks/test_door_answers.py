"""Answers from the model door: an agent that answered only through ``finmcp-proxy --llm-upstream``
(no ``answers`` row) gets its turns' final model texts as its predictions' answers (what scoring reads); a stored answer row wins over the
door's text for the same (sample, trial, turn). Real proxy + fake model upstream on loopback."""

from __future__ import annotations

from pathlib import Path

from finmcp.evaluator.inputs.answers import attach_answers, stored_answers
from finmcp.evaluator.inputs.model import PredictionSet
from finmcp.recordings.answers import StoredAnswer, put_answers
from finmcp.recordings.model_exchanges import exchanges
from finmcp.recordings.trace_store import open_trace_store
from tests.proxy.test_model_door import _post
from tests.support.fake_llm import TEXT, FakeLLM
from tests.support.polling import wait_for


def _ask(base: str, path: str, model: str) -> None:
    status, _ = _post(base, path, {"model": model, "messages": [{"role": "user", "content": "q"}]})
    assert status == 200


def _closed(db: Path, count: int) -> None:
    def probe() -> bool:
        with open_trace_store(db, readonly=True) as store:
            rows = exchanges(store, "ext")
        return len(rows) >= count and all(r["status"] != "open" for r in rows)

    wait_for(probe, what=f"{count} closed model exchanges")


def test_answers_given_only_through_the_model_door_are_scored(proxy_process, tmp_path):
    db = tmp_path / "runs.sqlite"
    with FakeLLM(chunks=2, delay=0.0) as llm:
        proxy = proxy_process(
            ["--upstream", "http://127.0.0.1:9/mcp", "--db", str(db), "--llm-upstream", llm.url]
        )
        base = proxy.url.rsplit("/mcp", 1)[0]
        _ask(base, "/r/ext/s/0/t/0/v1/chat/completions", "fake-tool")  # asks for a tool: no final text
        _ask(base, "/r/ext/s/0/t/0/v1/chat/completions", "fake")  # then answers
        _ask(base, "/r/ext/s/1/k/2/t/0/v1/chat/completions", "fake")  # trial 2
        _ask(base, "/r/ext/s/3/t/0/v1/chat/completions", "fake")  # has a stored row too
        _ask(base, "/r/other/s/4/t/0/v1/chat/completions", "fake")  # another run
        _closed(db, 4)
    put_answers(db, [StoredAnswer("ext", "3", 0, 0, "the stored one", source="harness")])

    found = stored_answers(db, "ext")
    assert {k: {t: (a.answer, a.source) for t, a in v.items()} for k, v in found.items()} == {
        ("0", 0): {0: (TEXT, "model")},
        ("1", 2): {0: (TEXT, "model")},
        ("3", 0): {0: ("the stored one", "harness")},  # the answers table first
    }
    preds = PredictionSet({}, "trace_db", str(db), "ext")
    assert attach_answers(preds, found) == 3
    assert preds.by_sample["0"][0].answer == TEXT and preds.by_sample["1"][0].trial == 2
