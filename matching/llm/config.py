"""Where the LLM lives: base URL, key, model and limits, from the environment.

>>> LLMConfig.from_env({}).configured
False
>>> c = LLMConfig.from_env({"CONTRACTEVAL_LLM_API_KEY": "k", "CONTRACTEVAL_LLM_MODEL": "m"})
>>> (c.configured, c.model, c.base_url)
(True, 'm', None)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class LLMConfig:
    api_key: str | None = None
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    timeout: float = 60.0
    max_retries: int = 3

    @property
    def configured(self) -> bool:
        return bool(self.api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig:
        env = os.environ if env is None else env
        return cls(
            api_key=env.get("CONTRACTEVAL_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None,
            base_url=env.get("CONTRACTEVAL_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
            model=env.get("CONTRACTEVAL_LLM_MODEL", cls.model),
            timeout=float(env.get("CONTRACTEVAL_LLM_TIMEOUT", cls.timeout)),
            max_retries=int(env.get("CONTRACTEVAL_LLM_MAX_RETRIES", cls.max_retries)),
        )
