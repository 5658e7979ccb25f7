"""The LLM declared compiler: an instruction artifact → proposed nodes, edges, invariants.

Same result type as the heuristic proposer (:class:`matching.propose.Proposals`):
FORMAT.md node/edge/invariant dicts with exact evidence spans ``{start, end, quote}``,
and a :class:`~matching.propose.ProposalNote` (score, justification) per proposed id.
The subclass :class:`LLMProposals` adds what only an LLM run has: the proposals that
were discarded and why, and the calls made (tokens, latency).

How the model's answer becomes proposals:

- The model never writes ids, offsets or statuses. It gives each item a local ``key``
  and *quotes* its evidence; the key is replaced by an id made from the label
  (:func:`matching.propose.suggest_id`, de-duplicated), and the quote is located in the
  artifact (:func:`matching.llm.locate.locate`: exact, then whitespace-normalised).
  A proposal whose quote is not in the artifact is discarded with the reason.
- Long artifacts go in overlapping chunks (``config.chunk_chars``); later chunks are
  told the nodes proposed so far, by id, so they can attach children and edges to
  them. A node whose span or label repeats one already kept is merged into it.
- A parent or edge endpoint that names nothing known is dropped (and reported); a
  parent that would close a cycle is dropped too, so the hierarchy stays a forest.

Without a configured endpoint use :func:`get_proposer`, which falls back to the
heuristic proposer with a :class:`~matching.extractors.FallbackWarning`:

>>> import warnings
>>> from matching.llm.config import LLMConfig
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     propose = get_proposer("llm", LLMConfig())
>>> propose("# Refunds\\n\\n1. Look up the order.\\n").proposer
'heuristic'
>>> "no LLM endpoint configured" in str(caught[0].message)
True
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..extractors import FallbackWarning
from ..formats import NODE_TYPES
from ..propose import ProposalNote, Proposals, propose_heuristic, suggest_id
from .anchor import MIN_ARTIFACT_WORDS, Index, Miss, QuoteReport
from .client import LLMClient, LLMError, data_message, data_sections
from .config import LLMConfig
from .locate import chunks

__all__ = [
    "PROPOSER_PROMPT",
    "PROPOSER_SCHEMA",
    "Discarded",
    "LLMProposals",
    "get_proposer",
    "propose_llm",
]

EDGE_KINDS = ("requires", "enables", "branches_to", "produces")

PROPOSER_PROMPT = """\
You compile an instruction artifact (a standard operating procedure, a policy or a
system prompt for an AI agent) into a hierarchical task network of obligations.

Propose:
- nodes, each with a type:
  intent (a goal a request can activate; the root of a procedure),
  action (a step the agent performs), decision (a point where the agent chooses
  between outcomes), branch_condition (one outcome of a decision: the condition under
  which its sub-steps apply; its parent is the decision), output_requirement (what the
  final answer must contain or look like), refusal (the agent must decline something),
  validation (the agent must check or verify something);
- edges between nodes: requires (the target may not happen without the source first),
  enables (the source comes before the target when both happen), branches_to (from a
  decision to each of its branch_condition outcomes), produces (an action produces an
  output requirement);
- invariants: response-level rules that hold throughout ("never ...", "always ...").

For every node and invariant:
- key: a short local key you choose (unique in your answer); parents and edges refer to
  nodes by key, or by the id of a node listed under "Already proposed";
- quote: a verbatim, contiguous excerpt of the DATA that states it: copy the words
  exactly, do not paraphrase, summarise or join separate passages;
- label: a short imperative label; description: one sentence, may be empty;
- parent (nodes): the key of the enclosing node, or null for a root;
- required (nodes): false only for optional steps and for branch_condition outcomes;
- score: your confidence in [0, 1]; justification: one sentence on why.
Propose only what the DATA states. If the DATA contains no procedure, return empty
lists."""

_NODE_ITEM = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "key",
        "type",
        "label",
        "description",
        "quote",
        "parent",
        "required",
        "score",
        "justification",
    ],
    "properties": {
        "key": {"type": "string"},
        "type": {"type": "string", "enum": list(NODE_TYPES)},
        "label": {"type": "string"},
        "description": {"type": "string"},
        "quote": {"type": "string"},
        "parent": {"type": ["string", "null"]},
        "required": {"type": "boolean"},
        "score": {"type": "number"},
        "justification": {"type": "string"},
    },
}
_EDGE_ITEM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["source", "target", "kind"],
    "properties": {
        "source": {"type": "string"},
        "target": {"type": "string"},
        "kind": {"type": "string", "enum": list(EDGE_KINDS)},
    },
}
_INVARIANT_ITEM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["key", "label", "description", "quote", "score", "justification"],
    "properties": {
        "key": {"type": "string"},
        "label": {"type": "string"},
        "description": {"type": "string"},
        "quote": {"type": "string"},
        "score": {"type": "number"},
        "justification": {"type": "string"},
    },
}
PROPOSER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["nodes", "edges", "invariants"],
    "properties": {
        "nodes": {"type": "array", "items": _NODE_ITEM},
        "edges": {"type": "array", "items": _EDGE_ITEM},
        "invariants": {"type": "array", "items": _INVARIANT_ITEM},
    },
}


@dataclass(frozen=True)
class Discarded:
    """A proposal (or a reference in one) that was not kept, and why."""

    what: str  # "node", "invariant", "edge" or "parent"
    label: str
    reason: str
    kind: str = ""  # for quotes: a key of matching.llm.anchor.MISS_WORDS

    def to_dict(self) -> dict[str, str]:
        # The kind stays out: the reason says it in words, and stored runs keep one shape.
        return {"what": self.what, "label": self.label, "reason": self.reason}


@dataclass
class LLMProposals(Proposals):
    """:class:`~matching.propose.Proposals` plus the discards and the calls of the run."""

    model: str = ""
    discarded: list[Discarded] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    quotes: QuoteReport = field(default_factory=QuoteReport)

    @property
    def unreliable(self) -> bool:
        """Most of the model's quotes were discarded (see :attr:`quotes`)."""
        return self.quotes.unreliable


def _check_answer(data: Any) -> str | None:
    """Semantic rules the JSON Schema (kept strict-mode compatible) cannot state."""
    keys: set[str] = set()
    for where in ("nodes", "invariants"):
        for i, item in enumerate(data[where]):
            if not 0.0 <= item["score"] <= 1.0:
                return f"$.{where}[{i}].score must be in [0, 1], not {item['score']}"
            if item["key"] in keys:
                return f"$.{where}[{i}].key {item['key']!r} is used twice"
            keys.add(item["key"])
    return None


def _norm_label(label: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", label.casefold()))


class _Merger:
    """Builds one :class:`LLMProposals` from the answers of successive chunks."""

    def __init__(self, text: str, model: str) -> None:
        self.text = text
        self.out = LLMProposals(proposer=f"llm:{model}", model=model)
        self.by_id: dict[str, dict[str, Any]] = {}
        self.span_owner: dict[tuple[int, int], str] = {}
        self.label_owner: dict[str, str] = {}
        self.chunk = Index(text, min_words=MIN_ARTIFACT_WORDS)
        self._whole: Index | None = None

    def fresh_id(self, label: str) -> str:
        base = suggest_id(label)
        candidate, n = base, 2
        while candidate in self.out.notes:
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def discard(self, what: str, label: str, reason: str, kind: str = "") -> None:
        self.out.discarded.append(Discarded(what, label, reason, kind))

    def find(self, what: str, label: str, quote: str) -> tuple[int, int] | None:
        """The quote's span (the chunk first: the model saw it; then the whole text, as
        a quote from the overlap may sit just outside the window), or None, reported."""
        found = self.chunk.anchor(quote)
        if isinstance(found, Miss) and found.kind == "not_found":
            if self._whole is None:
                self._whole = Index(self.text, min_words=MIN_ARTIFACT_WORDS)
            found = self._whole.anchor(quote)
        if isinstance(found, Miss):
            self.out.quotes.miss(found)
            reason = found.reason.replace("the source text", "the artifact")
            self.discard(what, label, reason, found.kind)
            return None
        self.out.quotes.kept()
        return found

    def add(self, answer: dict[str, Any], lo: int, hi: int) -> None:
        """Merge one chunk's answer (the chunk is ``text[lo:hi]``)."""
        keymap: dict[str, str] = {}  # the model's keys -> our ids
        self.chunk = Index(self.text, lo, hi, min_words=MIN_ARTIFACT_WORDS)
        parents = [p for item in answer["nodes"] if (p := self._node(item, keymap))]
        self._parents(parents, keymap)
        for item in answer["invariants"]:
            self._invariant(item)
        self._edges(answer["edges"], keymap)

    def _node(
        self, item: dict[str, Any], keymap: dict[str, str]
    ) -> tuple[str, str | None, str] | None:
        """Keep (or merge) one proposed node; ``(id, parent ref, label)`` when new."""
        label = item["label"].strip() or item["quote"].strip()[:90]
        found = self.find("node", label, item["quote"])
        if found is None:
            return None
        same = self.span_owner.get(found) or self.label_owner.get(_norm_label(label))
        if same is not None:
            keymap[item["key"]] = same  # a repeat (chunk overlap): merge, keep the best
            note = self.out.notes[same]
            if item["score"] > note.score:
                self.out.notes[same] = ProposalNote(float(item["score"]), note.justification)
            return None
        node_id = self.fresh_id(label)
        keymap[item["key"]] = node_id
        node = {
            "id": node_id,
            "type": item["type"],
            "label": label,
            "description": item["description"].strip(),
            "required": bool(item["required"]),
            "explicit": False,
            "combine": "all",
            "parent": None,
            "evidence": [self._span(found)],
            "meta": {},
        }
        self.out.nodes.append(node)
        self.by_id[node_id] = node
        self.span_owner[found] = node_id
        self.label_owner[_norm_label(label)] = node_id
        self.out.notes[node_id] = ProposalNote(float(item["score"]), item["justification"].strip())
        return node_id, item["parent"], label

    def _parents(self, parents: list[tuple[str, str | None, str]], keymap: dict[str, str]) -> None:
        for node_id, parent_ref, label in parents:
            if parent_ref is None:
                continue
            parent = self._resolve(parent_ref, keymap)
            if parent is None:
                self.discard("parent", label, f"parent {parent_ref!r} names no kept node")
            elif parent == node_id or node_id in self._ancestors(parent):
                self.discard("parent", label, f"parent {parent_ref!r} would make a cycle")
            else:
                self.by_id[node_id]["parent"] = parent

    def _invariant(self, item: dict[str, Any]) -> None:
        label = item["label"].strip() or item["quote"].strip()[:90]
        found = self.find("invariant", label, item["quote"])
        if found is None:
            return
        span = self._span(found)
        if any(inv["evidence"][0] == span for inv in self.out.invariants) or any(
            _norm_label(inv["label"]) == _norm_label(label) for inv in self.out.invariants
        ):
            return
        inv_id = self.fresh_id(label)
        self.out.invariants.append(
            {
                "id": inv_id,
                "label": label,
                "description": item["description"].strip(),
                "evidence": [span],
                "applies_to": [],
            }
        )
        self.out.notes[inv_id] = ProposalNote(float(item["score"]), item["justification"].strip())

    def _edges(self, edges: list[dict[str, Any]], keymap: dict[str, str]) -> None:
        for e in edges:
            source = self._resolve(e["source"], keymap)
            target = self._resolve(e["target"], keymap)
            name = f"{e['source']} -{e['kind']}-> {e['target']}"
            if source is None or target is None:
                self.discard("edge", name, "an endpoint names no kept node")
            elif source == target:
                self.discard("edge", name, "an edge from a node to itself")
            else:
                edge = {"source": source, "target": target, "kind": e["kind"]}
                if edge not in self.out.edges:
                    self.out.edges.append(edge)

    def _resolve(self, ref: str, keymap: dict[str, str]) -> str | None:
        if ref in keymap:
            return keymap[ref]
        return ref if ref in self.by_id else None

    def _ancestors(self, node_id: str) -> set[str]:
        seen: set[str] = set()
        p = self.by_id[node_id]["parent"]
        while p is not None and p not in seen:
            seen.add(p)
            p = self.by_id[p]["parent"]
        return seen

    def _span(self, found: tuple[int, int]) -> dict[str, Any]:
        s, e = found
        return {"start": s, "end": e, "quote": self.text[s:e]}

    def known(self) -> str:
        """The nodes kept so far, for the next chunk's prompt."""
        rows = [
            {"id": n["id"], "type": n["type"], "label": n["label"], "parent": n["parent"]}
            for n in self.out.nodes
        ]
        return json.dumps(rows, ensure_ascii=False)


def propose_llm(
    text: str,
    *,
    config: LLMConfig | None = None,
    client: LLMClient | None = None,
    overlap: int | None = None,
) -> LLMProposals:
    """Propose nodes, edges and invariants for ``text`` with the configured LLM.

    Raises :class:`~matching.llm.client.LLMError` when a call fails for good (after the
    retries and the one repair); nothing partial is returned then.
    """
    if client is None:
        client = LLMClient.shared(config or LLMConfig.from_env())
    size = max(200, client.config.chunk_chars)
    pieces = chunks(text, size=size, overlap=size // 8 if overlap is None else overlap)
    merger = _Merger(text, client.model)
    first_call = len(client.calls)
    for i, piece in enumerate(pieces):
        where = "the whole artifact" if len(pieces) == 1 else f"part {i + 1} of {len(pieces)}"
        artifact = f"instruction artifact ({where})"
        if merger.out.nodes:
            # The kept nodes are data too: inside the block, before the artifact part.
            user = data_sections(
                [
                    (
                        "ALREADY PROPOSED",
                        "Already proposed from earlier parts (refer to them by id as parent"
                        f" or edge endpoint; do not propose them again):\n{merger.known()}",
                    ),
                    (artifact.upper(), text[piece.start : piece.end]),
                ],
                f"{artifact} with the nodes already proposed",
            )
        else:
            user = data_message(text[piece.start : piece.end], artifact)
        answer = client.complete_json(
            purpose="propose",
            system=PROPOSER_PROMPT,
            user=user,
            schema_name="contract_proposals",
            schema=PROPOSER_SCHEMA,
            check=_check_answer,
        )
        merger.add(answer, piece.start, piece.end)
    merger.out.calls = [c.to_dict() for c in client.calls[first_call:]]
    return merger.out


def get_proposer(name: str, config: LLMConfig | None = None) -> Callable[[str], Proposals]:
    """``"heuristic"`` or ``"llm"`` → a function ``text -> Proposals``.

    ``"llm"`` without a configured key warns (:class:`FallbackWarning`) and returns the
    heuristic proposer, so a caller can always show which one actually ran
    (``Proposals.proposer``).
    """
    if name == "heuristic":
        return propose_heuristic
    if name != "llm":
        raise ValueError(f"unknown proposer {name!r}: expected 'heuristic' or 'llm'")
    config = config or LLMConfig.from_env()
    if not config.configured:
        warnings.warn(
            "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY):"
            " using the offline heuristic proposer instead",
            FallbackWarning,
            stacklevel=2,
        )
        return propose_heuristic
    client = LLMClient.shared(config)

    def propose(text: str) -> Proposals:
        return propose_llm(text, client=client)

    return propose


# LLMError is part of this module's contract: callers catch it from here.
__all__ += ["LLMError"]
