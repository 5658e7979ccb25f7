"""The LLM observed extractor (ALGORITHMS.md §7): a trace or response → ``contracteval.observed/v1``.

The model sees the source text and the node schema (the seven node types and what
counts as behaviour), never a contract or expected node ids. It quotes each behaviour's
evidence; the quote is anchored in the text (:mod:`matching.llm.anchor`: quotes,
dashes, case, emphasis and white space aside; unique; long enough; inside an
``[assistant]`` or ``[tool]`` event of a trace) and the node is kept with that exact
span, or dropped and reported in :attr:`LLMExtractor.dropped` with the reason. Ids (``o1``, ``o2`` ...) and steps are assigned here, in
text order of the evidence, so the model cannot choose them.

>>> from matching.llm.config import LLMConfig
>>> LLMExtractor(LLMConfig())
Traceback (most recent call last):
...
matching.llm.errors.LLMError: no LLM endpoint configured: set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any

from ..formats import NODE_TYPES, Observed
from ..model import observed_from_steps
from .anchor import AGENT_ROLES, Index, Miss, QuoteReport
from .client import LLMClient, data_message
from .config import LLMConfig
from .locate import chunks

__all__ = [
    "EXTRACTOR_PROMPT",
    "EXTRACTOR_SCHEMA",
    "DroppedNode",
    "LLMExtractor",
    "UnreliableExtraction",
]

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
    kind: str = "not_found"  # a key of matching.llm.anchor.MISS_WORDS

    def to_dict(self) -> dict[str, str]:
        return {"label": self.label, "quote": self.quote, "reason": self.reason, "kind": self.kind}


class UnreliableExtraction(UserWarning):
    """Most of the model's quotes were discarded: the observed graph is too thin to trust."""


class LLMExtractor:
    """A callable ``(text, *, kind) -> Observed`` backed by the configured LLM.

    After a call, :attr:`dropped` holds the nodes whose quote was discarded (with the
    reason) and :attr:`report` the counts (:class:`~matching.llm.anchor.QuoteReport`:
    ``unreliable`` when most were discarded, which also warns
    :class:`UnreliableExtraction`); :attr:`client` ``.calls`` holds every request made.
    In a trace only quotes inside ``[assistant]`` or ``[tool]`` events count.
    """

    __name__ = "extract_llm"  # read by callers that name the extractor they ran

    def __init__(self, config: LLMConfig | None = None, *, client: LLMClient | None = None):
        self.client = client or LLMClient.shared(config or LLMConfig.from_env())
        self.dropped: list[DroppedNode] = []
        self.report = QuoteReport()

    def __call__(self, text: str, *, kind: str = "trace") -> Observed:
        if kind not in _KIND_NOTES:
            raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
        system = EXTRACTOR_PROMPT.format(kind=kind, kind_note=_KIND_NOTES[kind])
        size = max(200, self.client.config.chunk_chars)
        self.dropped = []
        self.report = QuoteReport()
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
            self._anchor(Index(text, piece.start, piece.end), kind, answer["nodes"], found)
        for d in self.dropped:
            log.info("LLM extractor dropped %r: %s", d.label, d.reason)
        if self.report.unreliable:
            warnings.warn(
                f"the LLM extractor's result is unreliable: {self.report.summary()}",
                UnreliableExtraction,
                stacklevel=2,
            )
        steps = [(a, b, *rest) for (a, b), rest in sorted(found.items())]
        return observed_from_steps(text, kind, steps)

    def _anchor(
        self,
        index: Index,
        kind: str,
        items: list[dict[str, Any]],
        found: dict[tuple[int, int], tuple[str, str, str | None]],
    ) -> None:
        """Anchor one answer's quotes in its chunk; keep or report each."""
        roles = AGENT_ROLES if kind == "trace" and index.events() else None
        cursor = index.lo
        for item in items:
            label = item["label"].strip() or item["quote"].strip()[:120]
            # Of several matches the first after the previous step is the one meant:
            # the model lists steps in the order they happen.
            span = index.anchor(item["quote"], after=cursor, roles=roles)
            if isinstance(span, Miss):
                self.report.miss(span)
                self.dropped.append(DroppedNode(label, item["quote"], span.reason, span.kind))
                continue
            self.report.kept()
            cursor = span[1]
            # The same span from two overlapping chunks is one step.
            found.setdefault(span, (label, item["description"].strip(), item["type"]))
