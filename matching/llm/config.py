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
  at 30 s; a ``Retry-After`` header wins; default 1), ``CONTRACTEVAL_LLM_DEADLINE``
  (seconds one call may take over all its tries, default 180) and
  ``CONTRACTEVAL_LLM_CHUNK_CHARS`` (the longest piece of a text sent in one request,
  default 12000).
- ``CONTRACTEVAL_LLM_SEED`` (sent as ``seed``, default 0), ``CONTRACTEVAL_LLM_MAX_TOKENS``
  (sent as ``max_tokens``, default 4096), ``CONTRACTEVAL_LLM_MAX_ANSWER_CHARS`` (a longer
  answer is refused unread, default 200000) and ``CONTRACTEVAL_LLM_RESPONSE_FORMAT``
  (``json_schema``, the default, ``json_object`` or ``prompt``: what to ask for first;
  the client steps down by itself when an endpoint says it lacks one).

>>> LLMConfig.from_env({}).configured
False
>>> c = LLMConfig.from_env({"CONTRACTEVAL_LLM_API_KEY": "k", "CONTRACTEVAL_LLM_MODEL": "m"})
>>> (c.configured, c.model, c.base_url, c.response_format)
(True, 'm', None, 'json_schema')
>>> "sk-secret" in repr(LLMConfig(api_key="sk-secret"))
False
>>> LLMConfig.from_env({"CONTRACTEVAL_LLM_TIMEOUT": "soon"})
Traceback (most recent call last):
...
matching.llm.errors.LLMConfigError: CONTRACTEVAL_LLM_TIMEOUT='soon' is not a valid number
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import LLMConfigError

RESPONSE_FORMATS = ("json_schema", "json_object", "prompt")


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
    deadline: float = 180.0
    seed: int = 0
    max_tokens: int = 4096
    max_answer_chars: int = 200_000
    response_format: str = "json_schema"

    @property
    def configured(self) -> bool:
        return bool(self.api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig:
        """The configuration the environment describes; :class:`LLMConfigError` (a
        ``ValueError``) names the first malformed variable."""
        env = os.environ if env is None else env
        fmt = (env.get("CONTRACTEVAL_LLM_RESPONSE_FORMAT") or cls.response_format).strip()
        if fmt not in RESPONSE_FORMATS:
            raise LLMConfigError(
                f"CONTRACTEVAL_LLM_RESPONSE_FORMAT={fmt!r} must be one of"
                f" {', '.join(RESPONSE_FORMATS)}"
            )
        return cls(
            api_key=env.get("CONTRACTEVAL_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None,
            base_url=env.get("CONTRACTEVAL_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
            model=env.get("CONTRACTEVAL_LLM_MODEL") or cls.model,
            timeout=_number(env, "CONTRACTEVAL_LLM_TIMEOUT", cls.timeout, float),
            max_retries=_number(env, "CONTRACTEVAL_LLM_MAX_RETRIES", cls.max_retries, int),
            backoff=_number(env, "CONTRACTEVAL_LLM_BACKOFF", cls.backoff, float),
            chunk_chars=_number(env, "CONTRACTEVAL_LLM_CHUNK_CHARS", cls.chunk_chars, int),
            deadline=_number(env, "CONTRACTEVAL_LLM_DEADLINE", cls.deadline, float),
            seed=_number(env, "CONTRACTEVAL_LLM_SEED", cls.seed, int),
            max_tokens=_number(env, "CONTRACTEVAL_LLM_MAX_TOKENS", cls.max_tokens, int),
            max_answer_chars=_number(
                env, "CONTRACTEVAL_LLM_MAX_ANSWER_CHARS", cls.max_answer_chars, int
            ),
            response_format=fmt,
        )

    def describe(self) -> str:
        """Where calls go, for messages and run records (never the key).

        >>> LLMConfig(api_key="k", model="m", base_url="http://h/v1").describe()
        'model m at http://h/v1'
        """
        return f"model {self.model} at {self.base_url or 'the OpenAI API'}"

    def fingerprint(self) -> dict[str, str]:
        """What identifies the answers of this configuration (for input hashes).

        >>> LLMConfig(api_key="k", model="m").fingerprint()
        {'model': 'm', 'endpoint': 'https://api.openai.com/v1'}
        """
        return {"model": self.model, "endpoint": self.base_url or "https://api.openai.com/v1"}


def _number[T: (int, float)](env: Mapping[str, str], name: str, default: T, kind: type[T]) -> T:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw)
    except ValueError:
        what = "whole number" if kind is int else "number"
        raise LLMConfigError(f"{name}={raw!r} is not a valid {what}") from None
    if value < 0:
        raise LLMConfigError(f"{name}={raw!r} must not be negative")
    return value
