"""Fixtures of the LLM tests: a fake OpenAI-compatible server and clients pointed at it.

No test here touches the internet or a database: every request goes to 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from matching.llm.client import LLMClient
from matching.llm.config import LLMConfig

from .fake_openai import ENV_NAMES, FakeOpenAI


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's real key must never leak into a test (or send it anywhere)."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def config(server: FakeOpenAI) -> LLMConfig:
    return LLMConfig(
        api_key="test-key",
        base_url=server.base_url,
        model="fake-model",
        timeout=2.0,
        max_retries=2,
        backoff=0.01,
    )


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(config: LLMConfig, sleeps: Sleeps) -> LLMClient:
    return LLMClient(config, sleep=sleeps)


@pytest.fixture
def make_client(config: LLMConfig, sleeps: Sleeps):  # type: ignore[no-untyped-def]
    def make(**changes: object) -> LLMClient:
        return LLMClient(replace(config, **changes), sleep=sleeps)  # type: ignore[arg-type]

    return make


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI) -> FakeOpenAI:
    """The environment a user sets, pointed at the fake server (for CLI tests)."""
    monkeypatch.setenv("CONTRACTEVAL_LLM_API_KEY", "test-key")
    monkeypatch.setenv("CONTRACTEVAL_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("CONTRACTEVAL_LLM_MODEL", "fake-model")
    monkeypatch.setenv("CONTRACTEVAL_LLM_TIMEOUT", "2")
    monkeypatch.setenv("CONTRACTEVAL_LLM_MAX_RETRIES", "1")
    monkeypatch.setenv("CONTRACTEVAL_LLM_BACKOFF", "0.01")
    return server
