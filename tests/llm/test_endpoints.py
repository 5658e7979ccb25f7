"""The client against an endpoint that misbehaves the way real ones do (fake_openai.MODES)."""

from __future__ import annotations

import time

import pytest

from matching.llm.client import LLMClient, LLMError
from matching.llm.config import LLMConfig

from .fake_openai import FakeOpenAI, completion

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer", "why"],
    "properties": {"answer": {"type": "string"}, "why": {"type": "string"}},
}
GOOD = {"answer": "yes", "why": "stated"}


def ask(client: LLMClient):  # type: ignore[no-untyped-def]
    return client.complete_json(
        purpose="test", system="You answer.", user="data", schema_name="answer", schema=SCHEMA
    )


def test_sends_seed_and_max_tokens(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    server.push(completion(GOOD))
    assert ask(make_client(seed=7, max_tokens=300)) == GOOD
    req = server.requests[0]
    assert (req["seed"], req["max_tokens"], req["temperature"]) == (7, 300, 0)


def test_fenced_json_is_unwrapped_without_a_repair(server: FakeOpenAI, client: LLMClient):
    server.switch("fenced").push(completion(GOOD))
    assert ask(client) == GOOD
    assert len(server.requests) == 1


def test_malformed_json_twice_fails_as_not_json(server: FakeOpenAI, client: LLMClient):
    server.switch("malformed").push(completion(GOOD), completion(GOOD))
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "not_json" and "not JSON" in info.value.reason
    assert len(server.requests) == 2


def test_missing_field_is_repaired_once(server: FakeOpenAI, client: LLMClient):
    server.switch("missing_fields", 1).push(completion(GOOD), completion(GOOD))
    assert ask(client) == GOOD
    assert "'answer' is a required property" in server.requests[1]["messages"][-1]["content"]


def test_missing_field_twice_is_a_schema_mismatch(server: FakeOpenAI, client: LLMClient):
    server.switch("missing_fields").push(completion(GOOD), completion(GOOD))
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "schema_mismatch"
    assert "invalid after one repair" in info.value.reason


def test_rate_limit_waits_for_retry_after(server: FakeOpenAI, client: LLMClient, sleeps):  # type: ignore[no-untyped-def]
    server.retry_after = "7"
    server.switch("rate_limited", 1).push(completion(GOOD))
    assert ask(client) == GOOD
    assert sleeps == [7.0]  # the server's Retry-After, not our backoff of 0.01 s


def test_rate_limit_beyond_the_deadline_stops_at_once(server: FakeOpenAI, make_client, sleeps):  # type: ignore[no-untyped-def]
    server.retry_after = "600"
    server.switch("rate_limited")
    with pytest.raises(LLMError) as info:
        ask(make_client(deadline=30.0))
    err = info.value
    assert (err.kind, err.transient) == ("rate_limited", True)
    assert err.reason == (
        "test: rate limited; gave up after 1 try; last HTTP 429: Rate limit reached"
    )
    assert sleeps == [] and len(server.requests) == 1


def test_server_error_is_retried_then_reported(server: FakeOpenAI, client: LLMClient):
    server.switch("server_error")
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "server_error" and "gave up after 3 tries" in info.value.reason


def test_stall_ends_at_the_deadline(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    server.stall_seconds = 3.0
    server.switch("stall")
    client = make_client(timeout=10.0, deadline=0.6, max_retries=5)
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        ask(client)
    assert time.monotonic() - started < 2.0  # the deadline, not the 10 s timeout
    assert info.value.kind == "timed_out" and "0.6 s deadline passed" in info.value.reason


def test_html_with_status_200_names_the_base_url(server: FakeOpenAI, client: LLMClient):
    server.switch("html")
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "html" and not info.value.transient
    assert "returned an HTML page (HTTP 200)" in info.value.reason
    assert server.base_url in info.value.reason
    assert len(server.requests) == 1 and client.usage()["failed_calls"] == 1


def test_refusal_is_quoted(server: FakeOpenAI, client: LLMClient):
    server.switch("refusal")
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "refused"
    assert 'the model refused: "I can\'t help with that request."' in info.value.reason


def test_refusal_in_the_text_is_quoted(server: FakeOpenAI, client: LLMClient):
    server.push(completion("I'm sorry, but I cannot assist with auditing this."))
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "refused" and "cannot assist" in info.value.reason
    assert len(server.requests) == 1  # an apology is not repaired


def test_huge_answer_is_refused_unread(server: FakeOpenAI, client: LLMClient):
    server.switch("huge")
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        ask(client)
    assert time.monotonic() - started < 2.0
    assert (
        info.value.kind == "too_long" and "CONTRACTEVAL_LLM_MAX_ANSWER_CHARS" in info.value.reason
    )


def test_no_json_schema_steps_down_and_remembers(server: FakeOpenAI, client: LLMClient):
    server.switch("no_json_schema").push(completion(GOOD), completion(GOOD))
    assert ask(client) == GOOD
    assert ask(client) == GOOD
    formats = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    system = server.requests[1]["messages"][0]["content"]
    assert '"required": ["answer", "why"]' in system  # the schema moves into the prompt
    assert client.calls[0].error.startswith("HTTP 400")


def test_prompt_only_setting_sends_no_response_format(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    server.push(completion(GOOD))
    assert ask(make_client(response_format="prompt")) == GOOD
    assert "response_format" not in server.requests[0]


def test_cut_off_answer_says_so(server: FakeOpenAI, client: LLMClient):
    reply = completion('{"answer": "ye')
    reply.body["choices"][0]["finish_reason"] = "length"
    server.push(reply)
    with pytest.raises(LLMError) as info:
        ask(client)
    assert info.value.kind == "truncated" and "max_tokens=4096" in info.value.reason


def test_new_settings_are_read_and_checked():
    cfg = LLMConfig.from_env(
        {
            "CONTRACTEVAL_LLM_SEED": "3",
            "CONTRACTEVAL_LLM_MAX_TOKENS": "100",
            "CONTRACTEVAL_LLM_DEADLINE": "9.5",
            "CONTRACTEVAL_LLM_RESPONSE_FORMAT": "json_object",
        }
    )
    assert (cfg.seed, cfg.max_tokens, cfg.deadline, cfg.response_format) == (
        3,
        100,
        9.5,
        "json_object",
    )
    with pytest.raises(ValueError, match="CONTRACTEVAL_LLM_RESPONSE_FORMAT='xml' must be one of"):
        LLMConfig.from_env({"CONTRACTEVAL_LLM_RESPONSE_FORMAT": "xml"})
    with pytest.raises(ValueError, match="CONTRACTEVAL_LLM_SEED='1.5' is not a valid whole number"):
        LLMConfig.from_env({"CONTRACTEVAL_LLM_SEED": "1.5"})
