"""A small real OpenAI-compatible HTTP server on 127.0.0.1 answering from a script.

Every ``POST /v1/chat/completions`` pops the next scripted :class:`Reply` (status,
body, delay) and records the request body, so tests drive the real ``openai`` client
over real HTTP and then inspect exactly what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int
    body: Any  # a dict is sent as JSON, a str as is
    delay: float = 0.0


def completion(content: Any, *, prompt_tokens: int = 11, completion_tokens: int = 7) -> Reply:
    """A 200 chat completion whose message content is ``content`` (JSON-encoded unless a
    str, so a test can also send broken JSON)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(
        200,
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text, "refusal": None},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def error(status: int, message: str = "scripted error") -> Reply:
    return Reply(status, {"error": {"message": message, "type": "test", "code": None}})


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.paths.append(self.path)
                fake.requests.append(json.loads(raw or b"{}"))
                if self.path != "/v1/chat/completions":
                    reply = error(404, f"no route {self.path}")
                elif fake.script:
                    reply = fake.script.popleft()
                else:
                    reply = error(500, "the test script has no reply left")
                time.sleep(reply.delay)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = body.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away: that is the point

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval: shutdown() waits for one poll, once per test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def user_messages(self, i: int = -1) -> list[str]:
        return [m["content"] for m in self.requests[i]["messages"] if m["role"] == "user"]

    def system_message(self, i: int = -1) -> str:
        return next(m["content"] for m in self.requests[i]["messages"] if m["role"] == "system")


# Every variable the LLM configuration reads: tests clear them so a developer's real key
# never reaches a test (or is sent anywhere).
ENV_NAMES = (
    "CONTRACTEVAL_LLM_API_KEY",
    "OPENAI_API_KEY",
    "CONTRACTEVAL_LLM_BASE_URL",
    "OPENAI_BASE_URL",
    "CONTRACTEVAL_LLM_MODEL",
    "CONTRACTEVAL_LLM_TIMEOUT",
    "CONTRACTEVAL_LLM_MAX_RETRIES",
    "CONTRACTEVAL_LLM_BACKOFF",
    "CONTRACTEVAL_LLM_CHUNK_CHARS",
)
TEST_KEY = "sk-test-never-shown"


def point_env_at(monkeypatch, server: FakeOpenAI, *, key: str = TEST_KEY) -> None:
    """Configure the app, through its environment, to use ``server`` with fast retries."""
    monkeypatch.setenv("CONTRACTEVAL_LLM_API_KEY", key)
    monkeypatch.setenv("CONTRACTEVAL_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("CONTRACTEVAL_LLM_MODEL", "fake-model")
    monkeypatch.setenv("CONTRACTEVAL_LLM_TIMEOUT", "2")
    monkeypatch.setenv("CONTRACTEVAL_LLM_MAX_RETRIES", "1")
    monkeypatch.setenv("CONTRACTEVAL_LLM_BACKOFF", "0.01")
