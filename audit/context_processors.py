"""Template context for every page: where the LLM is, or that there is none.

The site-wide notice (``templates/base.html``) and the workspace's "LLM" proposer
button read ``llm``. It is built from :meth:`LLMConfig.from_env` on each request, so it
says what a proposal run started now would use. It never carries the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from matching.llm.config import LLMConfig

NOT_CONFIGURED = "LLM: not configured — proposals and extraction use the offline heuristics"


@dataclass(frozen=True)
class LLMStatus:
    configured: bool
    model: str = ""
    host: str = ""
    problem: str = ""  # a malformed CONTRACTEVAL_LLM_* setting

    @property
    def text(self) -> str:
        if self.problem:
            return f"LLM: misconfigured — {self.problem}"
        if not self.configured:
            return NOT_CONFIGURED
        return f"LLM: {self.model} @ {self.host}"


def _host(base_url: str | None) -> str:
    """The host (and port) of the endpoint, without any credentials or path."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host


def llm_status_from_env() -> LLMStatus:
    try:
        config = LLMConfig.from_env()
    except ValueError as exc:
        return LLMStatus(configured=False, problem=str(exc))
    if not config.configured:
        return LLMStatus(configured=False)
    return LLMStatus(configured=True, model=config.model, host=_host(config.base_url))


def llm(request) -> dict[str, LLMStatus]:
    return {"llm": llm_status_from_env()}
