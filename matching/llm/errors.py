"""The one failure type of the LLM components, with a short user-facing reason.

Every way a call can fail ends as an :class:`LLMError` whose ``kind`` is one of
:data:`KINDS` and whose ``reason`` is one line a user can act on ("rate limited (HTTP
429 …): gave up after 3 tries", "the endpoint returned an HTML page, not a chat
completion …"). Nothing else escapes the client, so a command prints one line and a
suite records the case as failed and goes on.

>>> err = LLMError("rate limited (HTTP 429: slow down)", kind="rate_limited", transient=True)
>>> (err.kind, err.transient, str(err))
('rate_limited', True, 'rate limited (HTTP 429: slow down)')
>>> isinstance(LLMConfigError("CONTRACTEVAL_LLM_TIMEOUT='soon' is not a number"), ValueError)
True
"""

from __future__ import annotations

__all__ = ["KINDS", "LLMConfigError", "LLMError", "short"]

# What went wrong, in words a user can act on; ``kind`` is the stable key.
KINDS = {
    "config": "bad LLM settings",
    "rate_limited": "rate limited",
    "timed_out": "timed out",
    "server_error": "server error",
    "connection": "cannot connect",
    "http_error": "request refused",
    "html": "endpoint returned HTML",
    "not_json": "not JSON",
    "schema_mismatch": "schema mismatch",
    "refused": "refused",
    "too_long": "answer too long",
    "truncated": "answer cut off",
    "empty": "empty answer",
}


class LLMError(RuntimeError):
    """An LLM call failed for good; ``reason`` says why (shown to users, recorded).

    ``transient`` is true when the last failure was a rate limit, a server error, a
    timeout or a connection error (the client's own retries are spent): a caller with a
    longer horizon, such as a Celery task, may try the whole job again later. ``kind``
    is a key of :data:`KINDS`.
    """

    def __init__(self, reason: str, *, transient: bool = False, kind: str = "http_error") -> None:
        self.reason = reason
        self.transient = transient
        self.kind = kind if kind in KINDS else "http_error"
        super().__init__(reason)


class LLMConfigError(LLMError, ValueError):
    """A malformed ``CONTRACTEVAL_LLM_*`` setting (also a :class:`ValueError`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, kind="config")


def short(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters.

    >>> short("a\\n  b " + "c" * 10, limit=6)
    'a b c…'
    """
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
