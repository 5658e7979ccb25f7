"""The model's answer text → JSON data, or a short reason why not.

Models wrap JSON in Markdown fences (```json … ```), add a sentence before it, or
answer with an apology instead; endpoints without structured output do so more often.
:func:`parse_answer` strips a fence, parses, validates against the schema and the
caller's semantic check, and classifies a failure (``not_json``, ``refused``,
``schema_mismatch``) with a reason that quotes the start of what came back.

>>> import jsonschema
>>> v = jsonschema.Draft202012Validator({"type": "object", "required": ["a"]})
>>> parse_answer('```json\\n{"a": 1}\\n```', v)
({'a': 1}, '', '')
>>> parse_answer("I'm sorry, I can't help with that.", v)[2]
'refused'
>>> parse_answer('{"b": 2}', v)[1]
"schema violation at $: 'a' is a required property"
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import short

if TYPE_CHECKING:
    import jsonschema

__all__ = ["Check", "parse_answer", "strip_fences"]

Check = Callable[[Any], str | None]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)\n?[ \t]*```", re.S)
_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry\b|i can(?:no|')t|i cannot|i won'?t|i will not|"
    r"i'?m (?:not able|unable)|i am (?:not able|unable)|as an ai)",
    re.I,
)


def strip_fences(content: str) -> str:
    """The JSON inside a Markdown code fence, or ``content`` stripped.

    >>> strip_fences('Here it is:\\n```json\\n{"a": 1}\\n```\\nDone.')
    '{"a": 1}'
    >>> strip_fences('  {"a": 1} ')
    '{"a": 1}'
    """
    text = content.strip()
    if "```" in text:
        m = _FENCE.search(text)
        if m:
            return m.group(1).strip()
    return text


def _decode(text: str) -> Any:
    """JSON data; when the text has prose around one object, the object itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start = text.find("{")
        if start <= 0:
            raise
        data, _ = json.JSONDecoder().raw_decode(text, start)
        return data


def parse_answer(
    content: str, validator: jsonschema.protocols.Validator, check: Check | None = None
) -> tuple[Any, str, str]:
    """``(data, "", "")`` or ``(None, what is wrong, kind)`` with kind ``not_json``,
    ``refused`` or ``schema_mismatch``."""
    text = strip_fences(content or "")
    if not text:
        return None, "not JSON: the answer was empty", "not_json"
    try:
        data = _decode(text)
    except json.JSONDecodeError as exc:
        if _REFUSAL.match(text):
            return None, f"the model refused: {short(text, 200)!r}", "refused"
        return (
            None,
            f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            f" the answer began {short(text, 80)!r}",
            "not_json",
        )
    # loaded by the first answer, not by importing the LLM client (the web app's start-up)
    from jsonschema.exceptions import best_match

    err = best_match(validator.iter_errors(data))
    if err is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        return None, f"schema violation at ${where}: {short(err.message)}", "schema_mismatch"
    if check is not None:
        msg = check(data)
        if msg:
            return None, msg, "schema_mismatch"
    return data, "", ""
