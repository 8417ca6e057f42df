"""A 2025-11-25 server with task-augmented ``tools/call`` (the core Tasks of that revision), on stdlib HTTP.

The mcp SDK 2.3.0 defines the 2025-11-25 task types but never serves them (its server refuses a
``CreateTaskResult`` for ``tools/call``), so this handler speaks the revision's wire itself, JSON
answers only: ``initialize`` (session id ``s-1``, capability ``tasks.requests.tools.call``); a
``tools/call`` with ``params.task`` answers ``{"task": {...working}}``; ``tasks/get`` says
``working`` until the :data:`POLLS`-th poll says ``completed`` (each poll sleeps :data:`POLL_S`);
``tasks/result`` answers ``"done X"``; a ``tools/call`` without ``task`` answers at once.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

POLLS = 5
POLL_S = 0.1
VERSION = "2025-11-25"


class TasksHandler(BaseHTTPRequestHandler):
    """One request per POST; the tasks live on the class (one test server at a time)."""

    tasks: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _task(self, task_id: str) -> dict[str, Any]:
        task = self.tasks[task_id]
        return {
            "taskId": task_id,
            "status": task["status"],
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttl": 60000,
            "pollInterval": 10,
        }

    def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return {
                "protocolVersion": VERSION,
                "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "tasks-2025", "version": "1"},
            }
        if method == "tools/call" and "task" in params:
            with self.lock:
                task_id = f"t{len(self.tasks) + 1}"
                self.tasks[task_id] = {"status": "working", "polls": 0, "x": params["arguments"]["x"]}
            return {"task": self._task(task_id)}
        if method == "tools/call":
            return {"content": [{"type": "text", "text": f"plain {params['arguments']['x']}"}]}
        task_id = params["taskId"]
        if method == "tasks/get":
            time.sleep(POLL_S)
            with self.lock:
                task = self.tasks[task_id]
                task["polls"] += 1
                if task["polls"] >= POLLS:
                    task["status"] = "completed"
            return self._task(task_id)
        text = f"done {self.tasks[task_id]['x']}"
        return {
            "content": [{"type": "text", "text": text}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}},
        }

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in body:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        answer = {
            "jsonrpc": "2.0",
            "id": body["id"],
            "result": self._result(body["method"], body.get("params", {})),
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Mcp-Session-Id", "s-1")
        self.end_headers()
        self.wfile.write(data)
