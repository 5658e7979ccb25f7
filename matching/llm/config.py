"""Where the LLM lives: base URL, key, model and limits, from the environment.

Names (the ``CONTRACTEVAL_LLM_*`` name wins over the ``OPENAI_*`` one):

- ``CONTRACTEVAL_LLM_API_KEY`` / ``OPENAI_API_KEY``: the key; without one nothing
  calls an LLM and every component falls back (or refuses) and says so.
- ``CONTRACTEVAL_LLM_BASE_URL`` / ``OPENAI_BASE_URL``: an OpenAI-compatible endpoint
  (vLLM, llama.cpp, Ollama ...); unset means OpenAI itself.
- ``CONTRACTEVAL_LLM_MODEL`` (default ``gpt-4o-mini``), ``CONTRACTEVAL_LLM_TIMEOUT``
  (seconds per request, default 60), ``CONTRACTEVAL_LLM_MAX_RETRIES`` (retries after
  the first try on 429/5xx/timeouts/connection errors, default 3).
- ``CONTRACTEVAL_LLM_BACKOFF`` (first retry delay in seconds, doubled per retry, capped
  at 30 s; default 1) and ``CONTRACTEVAL_LLM_CHUNK_CHARS`` (the longest piece of an
  artifact or trace sent in one request, default 12000).

>>> LLMConfig.from_env({}).configured
False
>>> c = LLMConfig.from_env({"CONTRACTEVAL_LLM_API_KEY": "k", "CONTRACTEVAL_LLM_MODEL": "m"})
>>> (c.configured, c.model, c.base_url)
(True, 'm', None)
>>> "sk-secret" in repr(LLMConfig(api_key="sk-secret"))
False
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LLMConfig:
    # repr=False: configs get logged and shown in errors; the key must never be.
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 1.0
    chunk_chars: int = 12000

    @property
    def configured(self) -> bool:
        return bool(self.api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig:
        env = os.environ if env is None else env
        return cls(
            api_key=env.get("CONTRACTEVAL_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None,
            base_url=env.get("CONTRACTEVAL_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
            model=env.get("CONTRACTEVAL_LLM_MODEL") or cls.model,
            timeout=_number(env, "CONTRACTEVAL_LLM_TIMEOUT", cls.timeout, float),
            max_retries=_number(env, "CONTRACTEVAL_LLM_MAX_RETRIES", cls.max_retries, int),
            backoff=_number(env, "CONTRACTEVAL_LLM_BACKOFF", cls.backoff, float),
            chunk_chars=_number(env, "CONTRACTEVAL_LLM_CHUNK_CHARS", cls.chunk_chars, int),
        )

    def describe(self) -> str:
        """Where calls go, for messages and run records (never the key).

        >>> LLMConfig(api_key="k", model="m", base_url="http://h/v1").describe()
        'model m at http://h/v1'
        """
        return f"model {self.model} at {self.base_url or 'the OpenAI API'}"


def _number[T: (int, float)](env: Mapping[str, str], name: str, default: T, kind: type[T]) -> T:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must not be negative")
    return value
