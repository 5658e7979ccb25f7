"""The LLM observed extractor (ALGORITHMS.md §7): a trace or response → ``contracteval.observed/v1``.

The model sees the source text and the node schema (the seven node types and what
counts as behaviour), never a contract or expected node ids. It quotes each behaviour's
evidence; the quote is located in the text (exact, then whitespace-normalised) and the
node is kept with that exact span, or dropped and reported in :attr:`LLMExtractor.dropped`
when the quote is not there. Ids (``o1``, ``o2`` ...) and steps are assigned here, in
text order of the evidence, so the model cannot choose them.

>>> from matching.llm.config import LLMConfig
>>> LLMExtractor(LLMConfig())
Traceback (most recent call last):
...
matching.llm.client.LLMError: no LLM endpoint configured: set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..formats import NODE_TYPES, Observed
from ..model import observed_from_steps
from .client import LLMClient, data_message
from .config import LLMConfig
from .locate import chunks, locate

__all__ = ["EXTRACTOR_PROMPT", "EXTRACTOR_SCHEMA", "DroppedNode", "LLMExtractor"]

log = logging.getLogger(__name__)

EXTRACTOR_PROMPT = """\
You extract the behaviour of an AI agent from a {kind} as a list of observed steps.

A {kind_note}
A step is something the agent did: a tool call, or a sentence of the agent that does,
checks, decides, asks for or refuses something. User, tool-result and system text is
context, never a step; greetings, thanks and filler are not steps either.

For every step, in the order they happen, give:
- quote: a verbatim, contiguous excerpt of the DATA that shows the step (copy it
  exactly: the whole tool call line, or the agent's sentence);
- label: a short past-tense description ("Looked up the order");
- description: one sentence, may be empty;
- type: one of intent, action, decision, branch_condition, output_requirement,
  refusal, validation (validation = checked or verified something; decision = chose
  between alternatives; refusal = declined; output_requirement = produced the final
  structured output), or null when none fits."""

_KIND_NOTES = {
    "trace": (
        "trace is rendered one event per line, each line starting with a role tag:"
        " [system], [user], [assistant], [tool] (a call) or [result] (what the tool"
        " returned); continuation lines are indented by two spaces. Steps come from"
        " [assistant] and [tool] events only."
    ),
    "response": "response is the agent's final answer; read it sentence by sentence.",
}

EXTRACTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["nodes"],
    "properties": {
        "nodes": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["quote", "label", "description", "type"],
                "properties": {
                    "quote": {"type": "string"},
                    "label": {"type": "string"},
                    "description": {"type": "string"},
                    "type": {"type": ["string", "null"], "enum": [*NODE_TYPES, None]},
                },
            },
        }
    },
}


@dataclass(frozen=True)
class DroppedNode:
    label: str
    quote: str
    reason: str


class LLMExtractor:
    """A callable ``(text, *, kind) -> Observed`` backed by the configured LLM.

    :attr:`dropped` holds the nodes of the *last* call whose quote was not found;
    :attr:`client` ``.calls`` holds every request made (tokens, latency).
    """

    __name__ = "extract_llm"  # read by callers that name the extractor they ran

    def __init__(self, config: LLMConfig | None = None, *, client: LLMClient | None = None):
        self.client = client or LLMClient.shared(config or LLMConfig.from_env())
        self.dropped: list[DroppedNode] = []

    def __call__(self, text: str, *, kind: str = "trace") -> Observed:
        if kind not in _KIND_NOTES:
            raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
        system = EXTRACTOR_PROMPT.format(kind=kind, kind_note=_KIND_NOTES[kind])
        size = max(200, self.client.config.chunk_chars)
        self.dropped = []
        found: dict[tuple[int, int], tuple[str, str, str | None]] = {}
        for piece in chunks(text, size=size, overlap=size // 8):
            if not text[piece.start : piece.end].strip():
                continue
            answer = self.client.complete_json(
                purpose="extract",
                system=system,
                user=data_message(text[piece.start : piece.end], kind),
                schema_name="observed_steps",
                schema=EXTRACTOR_SCHEMA,
            )
            cursor = piece.start
            for item in answer["nodes"]:
                # Search from the previous step on: a phrase said twice is most likely
                # the later occurrence when the model lists steps in order.
                span = locate(text, item["quote"], cursor, piece.end) or locate(
                    text, item["quote"], piece.start, piece.end
                )
                label = item["label"].strip() or item["quote"].strip()[:120]
                if span is None:
                    self.dropped.append(
                        DroppedNode(label, item["quote"], "quote not found in the source text")
                    )
                    continue
                cursor = span[1]
                # The same span from two overlapping chunks is one step.
                found.setdefault(span, (label, item["description"].strip(), item["type"]))
        for d in self.dropped:
            log.info("LLM extractor dropped %r: %s", d.label, d.reason)
        steps = [(a, b, *rest) for (a, b), rest in sorted(found.items())]
        return observed_from_steps(text, kind, steps)
