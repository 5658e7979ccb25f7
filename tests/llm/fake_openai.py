"""A small real OpenAI-compatible HTTP server on 127.0.0.1 answering from a script.

Every ``POST /v1/chat/completions`` pops the next scripted :class:`Reply` (status,
body, delay) and records the request body, so tests drive the real ``openai`` client
over real HTTP and then inspect exactly what was sent.

:meth:`FakeOpenAI.switch` makes it misbehave the way real endpoints do (:data:`MODES`):
a content mode (``malformed``, ``fenced``, ``missing_fields``) rewrites the next
scripted answer; the others answer in their own way without using the script
(``rate_limited`` is a 429 with ``Retry-After``, ``stall`` answers after
``stall_seconds``, ``html`` is a login page with status 200, ``huge`` a 3 MB answer,
``no_json_schema`` a 400 to any request asking for ``json_schema``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = (
    "good",
    "malformed",
    "fenced",
    "missing_fields",
    "rate_limited",
    "server_error",
    "stall",
    "html",
    "refusal",
    "huge",
    "no_json_schema",
)
HTML_PAGE = "<!DOCTYPE html><html><head><title>Sign in</title></head><body>Log in</body></html>"


@dataclass
class Reply:
    status: int
    body: Any  # a dict is sent as JSON, a str as is
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


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


def error(status: int, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(
        status,
        {"error": {"message": message, "type": "test", "code": None}},
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )


def refusal(text: str = "I can't help with that request.") -> Reply:
    reply = completion("")
    reply.body["choices"][0]["message"].update(content=None, refusal=text)
    return reply


def _rewrite(reply: Reply, mode: str) -> Reply:
    """A scripted good answer, spoilt the way ``mode`` says."""
    if mode == "good" or reply.status != 200 or not isinstance(reply.body, dict):
        return reply
    message = reply.body["choices"][0]["message"]
    if message.get("content") is None:
        return reply
    content = message["content"]
    if mode == "fenced":
        content = f"Here is the JSON you asked for:\n```json\n{content}\n```\n"
    elif mode == "malformed":
        content = content[: max(1, len(content) // 2)] + " ... }"
    elif mode == "missing_fields":
        data = json.loads(content)
        data.pop(next(iter(data)))
        content = json.dumps(data)
    body = json.loads(json.dumps(reply.body))
    body["choices"][0]["message"]["content"] = content
    return Reply(reply.status, body, reply.delay)


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.modes: deque[list[Any]] = deque()  # [mode, requests left or None]
        self.retry_after = "1"
        self.stall_seconds = 5.0
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
                else:
                    reply = fake.reply(fake.requests[-1])
                time.sleep(reply.delay)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = body.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
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

    def switch(self, mode: str, times: int | None = None) -> FakeOpenAI:
        """Misbehave as ``mode`` for the next ``times`` requests (None: until switched
        again); calls queue up, so ``switch("rate_limited", 1)`` then good answers."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        if times is None:
            self.modes.clear()
        self.modes.append([mode, times])
        return self

    def _mode(self) -> str:
        while self.modes and self.modes[0][1] == 0:
            self.modes.popleft()
        if not self.modes:
            return "good"
        entry = self.modes[0]
        if entry[1] is not None:
            entry[1] -= 1
        return str(entry[0])

    def _next(self) -> Reply:
        return self.script.popleft() if self.script else error(500, "the script is empty")

    def reply(self, request: dict[str, Any]) -> Reply:
        """The answer to one request, by the current mode."""
        mode = self._mode()
        asked = (request.get("response_format") or {}).get("type")
        special = {
            "rate_limited": lambda: error(429, "Rate limit reached", retry_after=self.retry_after),
            "server_error": lambda: error(500, "internal error"),
            "stall": lambda: Reply(200, completion({}).body, delay=self.stall_seconds),
            "html": lambda: Reply(200, HTML_PAGE, content_type="text/html; charset=utf-8"),
            "refusal": lambda: refusal(),
            "huge": lambda: completion('{"nodes": ["' + "x" * 3_000_000 + '"]}'),
        }
        if mode in special:
            return special[mode]()
        if mode == "no_json_schema" and asked == "json_schema":
            return error(400, "response_format type 'json_schema' is not supported by this model")
        return _rewrite(self._next(), mode)

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
    "CONTRACTEVAL_LLM_DEADLINE",
    "CONTRACTEVAL_LLM_SEED",
    "CONTRACTEVAL_LLM_MAX_TOKENS",
    "CONTRACTEVAL_LLM_MAX_ANSWER_CHARS",
    "CONTRACTEVAL_LLM_RESPONSE_FORMAT",
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
