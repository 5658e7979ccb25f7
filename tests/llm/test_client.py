"""The client over real HTTP: answers, retries, repair, timeouts, usage records."""

from __future__ import annotations

import json

import pytest

from matching.llm.client import SYSTEM_GUARD, LLMClient, LLMError
from matching.llm.config import LLMConfig

from .fake_openai import FakeOpenAI, Reply, completion, error

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}},
}


def ask(client: LLMClient, data: str = "some text", check=None):  # type: ignore[no-untyped-def]
    return client.complete_json(
        purpose="test",
        system="You answer.",
        user=f"BEGIN DATA x\n{data}\nEND DATA x",
        schema_name="answer",
        schema=SCHEMA,
        check=check,
    )


def test_success_sends_strict_schema_and_records_usage(server: FakeOpenAI, client: LLMClient):
    server.push(completion({"answer": "yes"}, prompt_tokens=40, completion_tokens=5))
    assert ask(client) == {"answer": "yes"}
    (req,) = server.requests
    assert server.paths == ["/v1/chat/completions"]
    assert req["model"] == "fake-model"
    assert req["temperature"] == 0
    assert req["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
    }
    assert req["messages"][0]["role"] == "system"
    assert SYSTEM_GUARD in req["messages"][0]["content"]
    (call,) = client.calls
    assert (call.ok, call.attempt, call.prompt_tokens, call.completion_tokens) == (
        True,
        1,
        40,
        5,
    )
    assert call.latency >= 0
    assert client.usage()["prompt_tokens"] == 40


def test_invalid_json_then_repair(server: FakeOpenAI, client: LLMClient):
    server.push(completion('{"answer": "unterminated'), completion({"answer": "fixed"}))
    assert ask(client) == {"answer": "fixed"}
    assert len(server.requests) == 2
    repair = server.requests[1]["messages"]
    # The bad answer goes back as the assistant's turn, followed by the reason.
    assert repair[-2] == {"role": "assistant", "content": '{"answer": "unterminated'}
    assert "not JSON" in repair[-1]["content"]
    assert [c.attempt for c in client.calls] == [1, 2]


def test_schema_violation_gets_one_repair_then_fails(server: FakeOpenAI, client: LLMClient):
    server.push(completion({"answer": 3}), completion({"answer": "ok", "extra": 1}))
    with pytest.raises(LLMError) as info:
        ask(client)
    assert "invalid after one repair" in info.value.reason
    assert "Additional properties" in info.value.reason
    assert len(server.requests) == 2  # exactly one repair, no third request
    assert "schema violation at $.answer" in server.requests[1]["messages"][-1]["content"]


def test_semantic_check_triggers_repair(server: FakeOpenAI, client: LLMClient):
    server.push(completion({"answer": "no"}), completion({"answer": "yes"}))

    def check(data: dict[str, str]) -> str | None:
        return None if data["answer"] == "yes" else "answer must be yes"

    assert ask(client, check=check) == {"answer": "yes"}
    assert "answer must be yes" in server.requests[1]["messages"][-1]["content"]


def test_429_then_success_backs_off(server: FakeOpenAI, client: LLMClient, sleeps: list[float]):
    server.push(error(429, "slow down"), error(429, "slow down"), completion({"answer": "ok"}))
    assert ask(client) == {"answer": "ok"}
    assert sleeps == [0.01, 0.02]  # exponential backoff from config.backoff
    assert [(c.ok, c.error) for c in client.calls][:2] == [
        (False, "HTTP 429: slow down"),
        (False, "HTTP 429: slow down"),
    ]


def test_500_until_failure(server: FakeOpenAI, client: LLMClient, sleeps: list[float]):
    server.push(*[error(500, "boom")] * 5)
    with pytest.raises(LLMError) as info:
        ask(client)
    assert len(server.requests) == 3  # the first try and max_retries=2 retries
    assert "gave up after 3 tries" in info.value.reason and "HTTP 500" in info.value.reason
    assert len(sleeps) == 2
    assert client.usage()["failed_calls"] == 3


def test_400_is_not_retried(server: FakeOpenAI, client: LLMClient, sleeps: list[float]):
    server.push(error(400, "bad schema"), completion({"answer": "never sent"}))
    with pytest.raises(LLMError, match="HTTP 400"):
        ask(client)
    assert len(server.requests) == 1 and sleeps == []


def test_timeout_then_success(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    client = make_client(timeout=0.3)
    server.push(Reply(200, completion({"answer": "late"}).body, delay=1.0))
    server.push(completion({"answer": "on time"}))
    assert ask(client) == {"answer": "on time"}
    assert client.calls[0].error is not None and client.calls[0].error.startswith("timeout")


def test_timeout_until_failure(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    client = make_client(timeout=0.2, max_retries=1)
    server.push(*[Reply(200, completion({"answer": "late"}).body, delay=0.8)] * 2)
    with pytest.raises(LLMError, match="timeout"):
        ask(client)
    assert [c.ok for c in client.calls] == [False, False]


def test_connection_refused_is_retried_then_fails(sleeps: list[float]):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = LLMConfig(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff=0)
    with pytest.raises(LLMError, match="connection error"):
        ask(LLMClient(cfg, sleep=sleeps))
    assert sleeps == [0.0]


def test_refusal_is_an_error(server: FakeOpenAI, client: LLMClient):
    body = completion({"answer": "x"}).body
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "I can't"}
    server.push(Reply(200, body))
    with pytest.raises(LLMError, match="refused"):
        ask(client)


def test_no_key_no_client():
    with pytest.raises(LLMError, match="no LLM endpoint configured"):
        LLMClient(LLMConfig())


def test_config_from_env_names_and_errors():
    env = {
        "OPENAI_API_KEY": "o",
        "CONTRACTEVAL_LLM_API_KEY": "c",
        "OPENAI_BASE_URL": "http://o/v1",
        "CONTRACTEVAL_LLM_TIMEOUT": "5",
        "CONTRACTEVAL_LLM_MAX_RETRIES": "0",
    }
    c = LLMConfig.from_env(env)
    assert (c.api_key, c.base_url, c.timeout, c.max_retries) == ("c", "http://o/v1", 5.0, 0)
    assert LLMConfig.from_env({"OPENAI_API_KEY": "o"}).api_key == "o"
    with pytest.raises(ValueError, match="CONTRACTEVAL_LLM_TIMEOUT='soon'"):
        LLMConfig.from_env({"CONTRACTEVAL_LLM_TIMEOUT": "soon"})
    assert "secret" not in repr(LLMConfig(api_key="secret"))
    assert json.dumps(LLMConfig.from_env({}).describe())
