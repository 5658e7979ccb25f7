"""Long JSON tool outputs for the 'json' variant: the original values, plus the kind of
envelope real APIs wrap them in (ids, timestamps, links, an audit list), pretty-printed.

Every extra value is drawn from a seeded generator; the original fields come first and
are never changed (an extra field whose name is taken gets an ``x_`` prefix).

>>> import json, random
>>> doc = long_result('{"order_id": "A-1", "days": 6}', random.Random(0))
>>> data = json.loads(doc)
>>> data["order_id"], data["days"], 1000 <= len(doc) <= 3200
('A-1', 6, True)
>>> json.loads(long_result("sent", random.Random(0)))["message"]
'sent'
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from ..trace import tool_call

MIN_CHARS, MAX_CHARS = 1000, 2800
_ARG = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^,]+)\s*(?:,|$)")
_ACTORS = ("api-gateway", "orders-service", "policy-engine", "notifier", "ledger", "crm-sync")
_ACTIONS = ("received", "validated", "authorized", "fetched", "cached", "serialized", "logged")
_REGIONS = ("eu-west-1", "us-east-1", "eu-central-1", "ap-southeast-2")


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _when(base: datetime, seconds: float = 0.0) -> str:
    return (base + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


def _audit_entry(rng: random.Random, base: datetime, k: int) -> dict[str, Any]:
    return {
        "event_id": f"evt_{_hex(rng, 16)}",
        "at": _when(base, k * rng.uniform(0.004, 0.09)),
        "actor": rng.choice(_ACTORS),
        "action": rng.choice(_ACTIONS),
        "latency_ms": rng.randint(1, 240),
        "tags": rng.sample(["cache:miss", "cache:hit", "retry:0", "auth:ok", "pii:masked"], 2),
    }


def _envelope(rng: random.Random) -> dict[str, Any]:
    """The extra fields, with an audit list long enough for the size drawn."""
    base = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 3 * 10**7))
    request = _hex(rng, 24)
    return {
        "request_id": f"req_{request}",
        "trace_id": _hex(rng, 32),
        "api_version": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "generated_at": _when(base),
        "region": rng.choice(_REGIONS),
        "links": {
            "self": f"https://api.example.internal/v2/requests/{request}",
            "docs": "https://api.example.internal/docs/errors",
        },
        "rate_limit": {"limit": 600, "remaining": rng.randint(0, 600), "reset_s": 60},
        "audit": [_audit_entry(rng, base, k) for k in range(2)],
        "_base": base,
    }


def _as_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return dict(value)
    return {"data": value}


def long_result(body: str, rng: random.Random) -> str:
    """A pretty-printed JSON document keeping the values of the tool output ``body``.

    Parameters
    ----------
    body : str
        The original ``[result]`` text: JSON (an object's fields are kept at the top,
        anything else goes under ``"data"``) or plain text (under ``"message"``).
    rng : random.Random

    Returns
    -------
    str
        Indented JSON of about ``MIN_CHARS`` to ``MAX_CHARS`` characters (longer when the
        original alone is longer), no line indented less than the first.
    """
    try:
        doc = _as_object(json.loads(body))
    except ValueError:
        doc = {"message": body}
    extra = _envelope(rng)
    base = extra.pop("_base")
    for k, v in extra.items():
        doc[k if k not in doc else f"x_{k}"] = v
    audit = doc["audit" if "x_audit" not in doc else "x_audit"]
    target = rng.randint(MIN_CHARS, MAX_CHARS)
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    while len(text) < target:
        entry = _audit_entry(rng, base, len(audit))
        if len(text) + len(json.dumps(entry, indent=2)) + 30 > MAX_CHARS:
            break
        audit.append(entry)
        text = json.dumps(doc, indent=2, ensure_ascii=False)
    return text


def call_result(call: str, rng: random.Random) -> str:
    """A JSON output made up for a ``[tool]`` call that has none: status and arguments.

    >>> import json, random
    >>> d = json.loads(call_result('[tool] refund(order_id="7", amount=9.5)', random.Random(0)))
    >>> d["status"], d["tool"], d["arguments"]
    ('ok', 'refund', {'order_id': '7', 'amount': '9.5'})
    """
    parsed = tool_call(call)
    name, args = parsed if parsed else (call.split("(")[0].strip(), "")
    arguments = {
        m.group(1): m.group(2).strip().strip("\"'") for m in _ARG.finditer(args) if m.group(1)
    }
    body = json.dumps({"status": "ok", "tool": name, "arguments": arguments})
    return long_result(body, rng)
