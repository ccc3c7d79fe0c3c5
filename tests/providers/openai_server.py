"""A tiny real OpenAI-shaped HTTP server on 127.0.0.1 for provider tests (no mocks)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent verbatim (malformed on purpose)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a hanging server)


@dataclass
class FakeOpenAI:
    """Replies are consumed in order; when none are queued, ``default`` answers."""

    url: str = ""
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    dims: int = 4

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def default(self, path: str, body: dict[str, Any]) -> Reply:
        if path.endswith("/embeddings"):
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": [float(len(t)), 1.0] + [0.5] * (self.dims - 2),
                }
                for i, t in enumerate(body["input"])
            ]
            return Reply(
                body={
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            )
        return Reply(body=chat_body('{"summary": "ok"}'))


def chat_body(content: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def serve() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append((self.path, body))
            reply = state.replies.popleft() if state.replies else state.default(self.path, body)
            if reply.delay:
                time.sleep(reply.delay)
            payload = (
                reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            ).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            try:
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
