"""The offline heuristic proposer: candidate obligations from an instruction artifact.

The proposer reads the artifact's outline (Markdown headings, numbered steps, bullets
and the sentences of plain paragraphs) and guesses, for every item, a node of the
``contracteval.contract/v1`` format. It is deliberately simple and fully deterministic:
its output is a starting point that an annotator confirms, edits or rejects in the
audit workspace, never a finished contract.

Rules (in this order; the first that fires wins):

- the first top-level heading (or, without headings, the first paragraph) is the
  ``intent``; the paragraph right below it is added to the intent's evidence (its
  purpose); lower headings become composite ``action`` nodes below the intent;
- a framing section (Purpose, Scope, Background, Definitions, References, Revision
  history, ...: :mod:`matching.context`) gets no node; of its sentences only those that
  direct someone (a modal such as "must", an imperative or a condition) are proposed;
- an item that starts with "if" or "when" is a ``branch_condition``; its condition clause
  (up to the first comma, colon or "then") is its evidence, the rest of the item becomes
  a child node typed by the rules below; its parent (the enclosing step, else the step
  just before it) becomes a ``decision`` with a ``branches_to`` edge to it;
- "never", "must not", "always", "do not" → an invariant (response-level, not a node);
- "respond with", "reply with", "finish with", "answer with", "JSON" → ``output_requirement``;
- "decline", "refuse" → ``refusal``;
- "verify", "check", "confirm", "validate", "ensure" → ``validation``;
- anything else → ``action``.

Parents come from the outline (headings, then list indentation); consecutive numbered
steps under the same parent get ``enables`` edges in step order. Every node and
invariant carries exact evidence spans ``{start, end, quote}`` with
``quote == text[start:end]``.

The proposal fields are returned *beside* the documents, not inside them: ``nodes`` and
``invariants`` are plain FORMAT.md objects (so they validate as they are), and
``Proposals.notes`` maps each proposed id to a :class:`ProposalNote` with the proposer's
``score`` (a confidence in [0, 1]) and a one-line ``justification``.

Example:

>>> text = "# Refunds\\n\\n1. Look up the order.\\n2. Verify the email.\\n"
>>> p = propose_heuristic(text)
>>> [(n["id"], n["type"], n["parent"]) for n in p.nodes]
[('refunds', 'intent', None), ('look_up_order', 'action', 'refunds'), \
('verify_email', 'validation', 'refunds')]
>>> p.edges
[{'source': 'look_up_order', 'target': 'verify_email', 'kind': 'enables'}]
>>> span = p.nodes[2]["evidence"][0]
>>> text[span["start"]:span["end"]] == span["quote"] == "Verify the email."
True
>>> p.notes["verify_email"].justification
'numbered step under "Refunds"; cue "verify" → validation'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .context import directs, is_context_heading

__all__ = ["ProposalNote", "Proposals", "propose_heuristic", "suggest_id", "suggest_type"]

PROPOSER = "heuristic"

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_NUMBERED = re.compile(r"^([ \t]*)(\d{1,3}|[a-zA-Z])[.)][ \t]+(\S.*?)\s*$")
_BULLET = re.compile(r"^([ \t]*)[-*+•][ \t]+(\S.*?)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_CONDITION = re.compile(r"^(if|when|whenever|unless|in case)\b", re.IGNORECASE)
_CONDITION_END = re.compile(r",|:|;|\s+then\s+|\s+—\s+|\s+-\s+")

_INVARIANT_CUES = ("never", "must not", "always", "do not", "don't", "under no circumstances")
_OUTPUT_CUES = ("respond with", "reply with", "finish with", "answer with", "end with", "json")
_REFUSAL_CUES = ("decline", "refuse")
_VALIDATION_CUES = ("verify", "check", "confirm", "validate", "ensure")
_OPTIONAL_CUES = ("optionally", "if needed", "if necessary", "may ", "you can ")
_ID_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an the to of for and or by on in at with from this that these those your their its"
        " be is are was it as any all each every if when",
    )
)


@dataclass(frozen=True)
class ProposalNote:
    """Why a node or invariant was proposed, and how sure the proposer is."""

    score: float
    justification: str


@dataclass
class Proposals:
    """What a proposer suggests for one artifact text.

    ``nodes``, ``edges`` and ``invariants`` are in the form of FORMAT.md §1;
    ``notes`` maps every proposed node or invariant id to its :class:`ProposalNote`.
    """

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    invariants: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, ProposalNote] = field(default_factory=dict)
    proposer: str = PROPOSER

    def contract_document(
        self, contract_id: str, text: str, media_type: str = "text/markdown"
    ) -> dict[str, Any]:
        """The proposals as a whole ``contracteval.contract/v1`` document over ``text``."""
        return {
            "format": "contracteval.contract/v1",
            "id": contract_id,
            "artifact": {"text": text, "media_type": media_type},
            "nodes": self.nodes,
            "edges": self.edges,
            "invariants": self.invariants,
            "queries": [],
        }


@dataclass
class _Item:
    kind: str  # heading | numbered | bullet | sentence
    level: float  # outline depth: headings 1-6, paragraphs 7, list items 8 + indent
    start: int
    end: int
    node_id: str | None = None
    children: list[_Item] = field(default_factory=list)
    parent: _Item | None = None


def _has_cue(text: str, cues: tuple[str, ...]) -> str | None:
    low = text.lower()
    for cue in cues:
        if re.search(r"(?<![a-z])" + re.escape(cue.strip()) + r"(?![a-z])", low):
            return cue.strip()
    return None


def _type_of(text: str) -> tuple[str, str | None]:
    """``(kind, cue)``: kind is a node type or ``"invariant"``."""
    for kind, cues in (
        ("invariant", _INVARIANT_CUES),
        ("output_requirement", _OUTPUT_CUES),
        ("refusal", _REFUSAL_CUES),
        ("validation", _VALIDATION_CUES),
    ):
        cue = _has_cue(text, cues)
        if cue:
            return kind, cue
    return "action", None


def suggest_type(text: str) -> str:
    """The node type the cue words of ``text`` suggest, or ``"invariant"``.

    >>> suggest_type("Never share the card number.")
    'invariant'
    >>> suggest_type("Verify the purchase belongs to the customer.")
    'validation'
    """
    return _type_of(text)[0]


_EMPHASIS = re.compile(r"\*\*|__|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])|`")


def _label(text: str) -> str:
    # Markdown emphasis marks are formatting of the artifact, not words of the label
    label = " ".join(_EMPHASIS.sub("", text).split()).rstrip(" .;:")
    if len(label) > 90:
        cut = label[:90].rsplit(" ", 1)[0]
        label = cut.rstrip(" ,;:") + "…"
    return label[:1].upper() + label[1:]


def _slug(text: str) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _ID_STOP]
    slug = "_".join(words[:4])[:48].strip("_")
    return slug or "node"


def suggest_id(text: str) -> str:
    """A node id made of the first content words of ``text``.

    Parameters
    ----------
    text : str

    Returns
    -------
    str

    Examples
    --------
    >>> suggest_id("Verify the purchase belongs to the customer.")
    'verify_purchase_belongs_customer'
    """
    return _slug(text)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _outline(text: str) -> list[_Item]:
    """Headings, list items and paragraph sentences, in text order."""
    items: list[_Item] = []
    pos = 0
    previous_item: _Item | None = None
    previous_blank = True
    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        if not line.strip():
            previous_blank = True
            previous_item = None
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        if m := _HEADING.match(line):
            if m.group(2):
                s, e = _strip_span(text, line_start + m.start(2), line_start + m.end(2))
                previous_item = _Item("heading", float(len(m.group(1))), s, e)
                items.append(previous_item)
            previous_blank = False
            continue
        m = _NUMBERED.match(line) or _BULLET.match(line)
        if m:
            kind = "numbered" if m.re is _NUMBERED else "bullet"
            content = m.lastindex or 2
            s, e = line_start + m.start(content), line_start + m.end(content)
            previous_item = _Item(kind, 8 + len(m.group(1).expandtabs(4)) / 100, s, e)
            items.append(previous_item)
            previous_blank = False
            continue
        if previous_item is not None and not previous_blank and indent > 0:
            # A continuation line of the list item above.
            previous_item.end = _strip_span(text, line_start, line_end)[1]
            continue
        # Plain paragraph text: one item per sentence.
        body_start, _ = _strip_span(text, line_start, line_end)
        body = text[body_start:line_end]
        offset = 0
        for piece in _SENTENCE_END.split(body):
            found = body.index(piece, offset)
            s, e = _strip_span(text, body_start + found, body_start + found + len(piece))
            offset = found + len(piece)
            if e > s:
                items.append(_Item("sentence", 7.0, s, e))
        previous_item = None
        previous_blank = False
    return items


def _nest(items: list[_Item]) -> None:
    stack: list[_Item] = []
    for item in items:
        while stack and stack[-1].level >= item.level:
            stack.pop()
        if stack:
            item.parent = stack[-1]
            stack[-1].children.append(item)
        if item.kind != "sentence":
            stack.append(item)


class _Builder:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out = Proposals()
        self.by_id: dict[str, dict[str, Any]] = {}
        self.titles: dict[str, str] = {}

    def span(self, start: int, end: int) -> dict[str, Any]:
        return {"start": start, "end": end, "quote": self.text[start:end]}

    def fresh_id(self, label: str) -> str:
        base = _slug(label)
        candidate, n = base, 2
        while candidate in self.by_id or candidate in self.out.notes:
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def node(
        self,
        type_: str,
        start: int,
        end: int,
        parent: str | None,
        score: float,
        why: str,
        *,
        required: bool = True,
    ) -> str:
        label = _label(self.text[start:end])
        node_id = self.fresh_id(label)
        node = {
            "id": node_id,
            "type": type_,
            "label": label,
            "description": "",
            "required": required,
            "explicit": False,
            "combine": "all",
            "parent": parent,
            "evidence": [self.span(start, end)],
            "meta": {},
        }
        self.out.nodes.append(node)
        self.by_id[node_id] = node
        self.titles[node_id] = label
        self.out.notes[node_id] = ProposalNote(score, why)
        return node_id

    def invariant(self, start: int, end: int, score: float, why: str) -> str:
        label = _label(self.text[start:end])
        inv_id = self.fresh_id(label)
        self.out.invariants.append(
            {
                "id": inv_id,
                "label": label,
                "description": "",
                "evidence": [self.span(start, end)],
                "applies_to": [],
            }
        )
        self.out.notes[inv_id] = ProposalNote(score, why)
        return inv_id

    def edge(self, source: str, target: str, kind: str) -> None:
        edge = {"source": source, "target": target, "kind": kind}
        if edge not in self.out.edges:
            self.out.edges.append(edge)


def _where(item: _Item, parent_title: str | None) -> str:
    what = {
        "heading": "heading",
        "numbered": "numbered step",
        "bullet": "bullet",
        "sentence": "sentence",
    }[item.kind]
    return f'{what} under "{parent_title}"' if parent_title else what


def propose_heuristic(text: str) -> Proposals:
    """Propose nodes, edges and invariants for ``text`` (see the module docstring).

    Parameters
    ----------
    text : str
        The artifact: instructions, a policy, a runbook.

    Returns
    -------
    Proposals
    """
    b = _Builder(text)
    items = _outline(text)
    _nest(items)
    intent_item = _intent_item(items)
    for item in items:
        if item.parent is None:
            root = intent_item.node_id if intent_item and item is not intent_item else None
            _place(b, item, root, intent_item)
    return b.out


def _intent_item(items: list[_Item]) -> _Item | None:
    """The item that becomes the intent: the first top-level heading, else the first item."""
    headings = [i for i in items if i.kind == "heading"]
    if headings:
        top = min(h.level for h in headings)
        return next(h for h in headings if h.level == top)
    return items[0] if items else None


def _own_node(b: _Builder, item: _Item, parent_id: str | None, intent: _Item | None) -> str | None:
    """Create the node (or invariant) of ``item`` below ``parent_id``; its node id."""
    quote = b.text[item.start : item.end]
    where = _where(item, b.titles.get(parent_id) if parent_id else None)
    if item is intent:
        return b.node("intent", item.start, item.end, None, 0.8, f"top {where} → intent")
    if item.kind == "heading":
        why = f"{where}; a section → action"
        return b.node("action", item.start, item.end, parent_id, 0.5, why)
    if m := _CONDITION.match(quote):
        return _place_condition(b, item, parent_id, where, m.group(1).lower())
    kind, cue = _type_of(quote)
    if kind == "invariant":
        b.invariant(item.start, item.end, 0.75, f'{where}; cue "{cue}" → invariant')
        return None
    optional = _has_cue(quote, _OPTIONAL_CUES) is not None
    why = f'{where}; cue "{cue}" → {kind}' if cue else f"{where}; no cue → action"
    confidence = 0.7 if cue else 0.55
    return b.node(kind, item.start, item.end, parent_id, confidence, why, required=not optional)


def _place(
    b: _Builder, item: _Item, parent_id: str | None, intent: _Item | None, context: bool = False
) -> None:
    """Create the node(s) of ``item`` below ``parent_id``; then its children.

    ``context``: ``item`` lies in a framing section (Purpose, Scope, ...; see
    :mod:`matching.context`), where only sentences that direct someone become nodes.
    """
    quote = b.text[item.start : item.end]
    if item is not intent and item.kind == "heading" and is_context_heading(quote):
        context = True
    if context and (item.kind == "heading" or not directs(quote)):
        for child in item.children:
            _place(b, child, parent_id, intent, context)
        return
    own_id = _own_node(b, item, parent_id, intent)
    item.node_id = own_id
    children = list(item.children)
    # The paragraph right below the intent heading states its purpose.
    if item is intent and item.kind == "heading":
        assert own_id is not None
        while children and children[0].kind == "sentence":
            purpose = children.pop(0)
            b.by_id[own_id]["evidence"].append(b.span(purpose.start, purpose.end))
    below = own_id if own_id is not None else parent_id
    previous_step: _Item | None = None
    for child in children:
        _place(b, child, below, intent, context)
        if child.kind == "numbered" and child.node_id and not _is_branch(b, child.node_id):
            if previous_step is not None and previous_step.node_id:
                b.edge(previous_step.node_id, child.node_id, "enables")
            previous_step = child


def _is_branch(b: _Builder, node_id: str) -> bool:
    return b.by_id[node_id]["type"] == "branch_condition"


def _decision_for(b: _Builder, item: _Item, parent_id: str | None) -> str | None:
    """The node that decides between ``item`` and its alternatives."""
    candidate: str | None = None
    if item.parent is not None and item.parent.kind in {"numbered", "bullet"}:
        candidate = item.parent.node_id
    elif item.parent is not None:
        siblings = item.parent.children
        before = siblings[: siblings.index(item)]
        for sibling in reversed(before):
            if sibling.node_id and not _is_branch(b, sibling.node_id):
                if sibling.kind in {"numbered", "bullet"}:
                    candidate = sibling.node_id
                break
    if candidate is None:
        return None
    node = b.by_id[candidate]
    if node["type"] != "decision":
        if node["type"] in {"intent", "output_requirement"}:
            return None
        node["type"] = "decision"
        note = b.out.notes[candidate]
        b.out.notes[candidate] = ProposalNote(
            note.score, note.justification + "; has conditional sub-steps → decision"
        )
    return candidate


def _place_condition(b: _Builder, item: _Item, parent_id: str | None, where: str, cue: str) -> str:
    text = b.text
    quote = text[item.start : item.end]
    end_match = _CONDITION_END.search(quote)
    cond_end = item.start + end_match.start() if end_match else item.end
    rest_start = item.start + end_match.end() if end_match else item.end
    cond_start, cond_end = _strip_span(text, item.start, cond_end)
    decision = _decision_for(b, item, parent_id)
    branch_id = b.node(
        "branch_condition",
        cond_start,
        cond_end,
        decision or parent_id,
        0.7,
        f'{where}; cue "{cue}" → branch_condition' + (f' of "{decision}"' if decision else ""),
        required=False,
    )
    if decision:
        b.edge(decision, branch_id, "branches_to")
    rest_start, rest_end = _strip_span(text, rest_start, item.end)
    if rest_end > rest_start and re.search(r"[A-Za-z]", text[rest_start:rest_end]):
        kind, rest_cue = _type_of(text[rest_start:rest_end])
        why = f'consequence of "{b.titles[branch_id]}"'
        if kind == "invariant":
            b.invariant(rest_start, rest_end, 0.6, f'{why}; cue "{rest_cue}" → invariant')
        else:
            why += f'; cue "{rest_cue}" → {kind}' if rest_cue else "; no cue → action"
            b.node(kind, rest_start, rest_end, branch_id, 0.6, why)
    return branch_id
