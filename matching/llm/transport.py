"""HTTP side of a call: one request, retried, bounded, and every failure classified.

:meth:`Transport.answer` returns the text of the model's message or raises
:class:`~matching.llm.errors.LLMError` (or :class:`FormatUnsupported`, for the client
to step down its response format). Retries use ``tenacity``: transient failures (429,
5xx, timeouts, connection errors) wait for the ``Retry-After`` the server sent, or an
exponential backoff, and stop at ``max_retries`` or at the call's deadline, whichever
comes first.

>>> _retry_after({"retry-after": "2"}), _retry_after({"retry-after-ms": "1500"})
(2.0, 1.5)
>>> _retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
True
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import openai
import tenacity
from openai.types.chat import ChatCompletion

from .config import LLMConfig
from .errors import LLMError, short

MAX_BACKOFF = 30.0
# A 400/422 whose message names the response format: the endpoint lacks that format.
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|structured output", re.I)


@dataclass
class CallRecord:
    """One HTTP request to the model."""

    purpose: str
    model: str
    attempt: int  # 1 for the first try, counting retries and the repair request
    ok: bool
    latency: float  # seconds
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FormatUnsupported(Exception):
    """The endpoint refused the requested ``response_format``."""

    def __init__(self, reason: str, attempt: int) -> None:
        self.reason = reason
        self.attempt = attempt
        super().__init__(reason)


_WORDS = {
    "rate_limited": "rate limited",
    "server_error": "server error",
    "timed_out": "timed out",
    "connection": "cannot connect to the endpoint",
}


class _Transient(Exception):
    """A failure worth another try: rate limit, 5xx, timeout, connection error."""

    def __init__(self, kind: str, reason: str, retry_after: float | None = None) -> None:
        self.kind = kind
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``Retry-After`` / ``retry-after-ms`` (seconds form only)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) / scale)
        except ValueError:
            continue
    return None


def _is_html(headers: Mapping[str, str], body: bytes) -> bool:
    head = body.lstrip()[:15].lower()
    return "html" in headers.get("content-type", "") or head.startswith((b"<!doctype", b"<html"))


class _StopAt(tenacity.stop.stop_base):
    """Never sleep past the call's deadline: give up now instead."""

    def __init__(self, clock: Callable[[], float], deadline: float) -> None:
        self.clock = clock
        self.deadline = deadline

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.clock() + (retry_state.upcoming_sleep or 0.0) >= self.deadline


class Transport:
    """Sends chat-completion requests for one :class:`LLMConfig`."""

    def __init__(
        self,
        config: LLMConfig,
        client: openai.OpenAI,
        *,
        record: Callable[[CallRecord], None],
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.client = client
        self.record = record
        self.sleep = sleep
        self.clock = clock

    def answer(
        self, purpose: str, request: dict[str, Any], attempt: int, deadline: float
    ) -> tuple[str, int]:
        """``(text, attempt)``, retrying transient failures until the deadline."""
        state = {"attempt": attempt}
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Transient),
            stop=tenacity.stop_after_attempt(self.config.max_retries + 1)
            | _StopAt(self.clock, deadline),
            wait=self._wait,
            sleep=self.sleep,
            reraise=True,
        )
        try:
            for try_ in retrying:
                with try_:
                    state["attempt"] += 1
                    return self._once(purpose, request, state["attempt"], deadline), state[
                        "attempt"
                    ]
        except _Transient as exc:
            tries = state["attempt"] - attempt
            late = self.clock() >= deadline - 0.05
            why = f"the {self.config.deadline:g} s deadline passed" if late else "gave up"
            raise LLMError(
                f"{purpose}: {_WORDS[exc.kind]}; {why} after {tries}"
                f" {'try' if tries == 1 else 'tries'}; last {exc.reason}",
                transient=True,
                kind=exc.kind,
            ) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _wait(self, rs: tenacity.RetryCallState) -> float:
        exc = rs.outcome.exception() if rs.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        return min(self.config.backoff * 2 ** (rs.attempt_number - 1), MAX_BACKOFF)

    def _once(self, purpose: str, request: dict[str, Any], attempt: int, deadline: float) -> str:
        """One HTTP request; records it; the message text or an exception."""
        remaining = deadline - self.clock()
        if remaining <= 0:
            raise _Transient("timed_out", "no time left for another request")
        timeout = max(0.05, min(self.config.timeout, remaining))
        started = time.perf_counter()
        try:
            raw = self.client.chat.completions.with_raw_response.create(**request, timeout=timeout)
        except openai.APITimeoutError:
            self._fail(purpose, attempt, started, f"timeout error after {timeout:g} s")
            raise _Transient(
                "timed_out", f"timeout error: no answer within {timeout:g} s"
            ) from None
        except openai.APIConnectionError as exc:
            self._fail(purpose, attempt, started, f"connection error: {exc}")
            raise _Transient("connection", f"connection error: {exc}") from None
        except openai.APIStatusError as exc:
            self._status_error(purpose, attempt, started, exc)
        http = raw.http_response
        if _is_html(http.headers, http.content):
            error = f"the endpoint returned an HTML page (HTTP {http.status_code})"
            self._fail(purpose, attempt, started, error)
            raise LLMError(
                f"{purpose}: {error}, not a chat completion: is the base URL right"
                f" ({self.config.base_url or 'the OpenAI API'}; most servers need it to end"
                " in /v1)?",
                kind="html",
            )
        limit = self.config.max_answer_chars
        if len(http.content) > 4 * limit + 65536:
            self._fail(purpose, attempt, started, f"answer too long ({len(http.content)} bytes)")
            raise self._too_long(purpose, len(http.content), "bytes")
        return self._message(purpose, attempt, started, raw.parse())

    def _message(self, purpose: str, attempt: int, started: float, resp: Any) -> str:
        latency = round(time.perf_counter() - started, 4)
        if not isinstance(resp, ChatCompletion) or not resp.choices:
            self._fail(purpose, attempt, started, "not a chat completion")
            raise LLMError(
                f"{purpose}: the endpoint's answer is not a chat completion"
                f" (it began {short(str(resp), 80)!r})",
                kind="not_json",
            )
        usage = resp.usage
        self.record(
            CallRecord(
                purpose,
                resp.model or self.config.model,
                attempt,
                True,
                latency,
                getattr(usage, "prompt_tokens", 0) or 0,
                getattr(usage, "completion_tokens", 0) or 0,
            )
        )
        choice = resp.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise LLMError(f"{purpose}: the model refused: {short(refusal)!r}", kind="refused")
        content = message.content or ""
        if len(content) > self.config.max_answer_chars:
            raise self._too_long(purpose, len(content), "characters")
        if choice.finish_reason == "length":
            raise LLMError(
                f"{purpose}: the answer was cut off at max_tokens={self.config.max_tokens}"
                " (raise CONTRACTEVAL_LLM_MAX_TOKENS, or lower CONTRACTEVAL_LLM_CHUNK_CHARS)",
                kind="truncated",
            )
        return content

    def _too_long(self, purpose: str, size: int, unit: str) -> LLMError:
        return LLMError(
            f"{purpose}: the answer is too long ({size} {unit}; the limit is"
            f" {self.config.max_answer_chars} characters, CONTRACTEVAL_LLM_MAX_ANSWER_CHARS)",
            kind="too_long",
        )

    def _status_error(
        self, purpose: str, attempt: int, started: float, exc: openai.APIStatusError
    ) -> None:
        """Classify an HTTP error status; always raises."""
        status = exc.status_code
        headers = exc.response.headers
        if _is_html(headers, exc.response.content):
            detail = "an HTML page"
        else:
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = short(str(body.get("message") or exc.message))  # the server's words
        error = f"HTTP {status}: {detail}"
        self._fail(purpose, attempt, started, error)
        if status == 429:
            raise _Transient("rate_limited", error, _retry_after(headers))
        if status >= 500:
            raise _Transient("server_error", error, _retry_after(headers))
        if (
            status in (400, 422)
            and _FORMAT_WORDS.search(detail)
            and "response_format"
            in (str(exc.request.content, "utf-8", "replace") if exc.request else "")
        ):
            raise FormatUnsupported(error, attempt)
        kind = "html" if detail == "an HTML page" else "http_error"
        raise LLMError(f"{purpose}: the endpoint refused the request ({error})", kind=kind)

    def _fail(self, purpose: str, attempt: int, started: float, error: str) -> None:
        latency = round(time.perf_counter() - started, 4)
        self.record(CallRecord(purpose, self.config.model, attempt, False, latency, error=error))
