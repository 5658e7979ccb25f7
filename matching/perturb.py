"""Perturbation generators of the controlled suite (ALGORITHMS.md §5).

Each generator turns a clean gold execution into one case whose label is true by
construction: it edits ``source.text`` together with the nodes, recomputes every span,
renumbers steps in text order, and keeps a candidate only when the oracle evaluator
reports exactly the label's (family, location) and nothing else.

Choices: the candidates of a family are listed in a fixed order (declaration order of
the contract, then observed order); the generator shuffles that list once with
``random.Random(f"{seed}:{clean_id}:{family}")`` and tries the candidates in the shuffled
order, drawing any further choice (an enactment wording, an insertion point, a
corruption) from the same generator. The first candidate that verifies is kept.

>>> from pathlib import Path
>>> from matching.formats import read_observed, Case
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> clean = Case("refund-mini/q1/clean", "refund-mini", "q1",
...              read_observed(data / "refund-mini-observed-q1.json"), True)
>>> case = perturb_case(c, clean, "ordering", seed=0)
>>> case.family, case.location
('ordering', 'approve_refund->confirm_outcome')
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import checks
from .conditioning import Expected, condition
from .evaluate import evaluate_detailed
from .formats import FAMILIES, Case, Contract, Edge, Observed, ObservedNode, Span
from .similarity import THRESHOLD, sim, tokens
from .trace import events, is_call, tag

# Actions an agent might take that no procedure of the suite supports. The generator
# keeps only those whose similarity to every declared node is below the threshold.
UNSUPPORTED_ACTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "Subscribed the user to the marketing newsletter",
        "Added the email to a promotional mailing list.",
        "I've also signed you up for our weekly newsletter with seasonal promotions.",
    ),
    (
        "Posted a summary on social media",
        "Shared the conversation publicly.",
        'post_to_social(channel="twitter", text="Helped another happy customer today!")',
    ),
    (
        "Recommended a premium upgrade",
        "Upsold a paid tier.",
        "By the way, our Platinum tier comes with lounge perks for just 19.99 a month.",
    ),
    (
        "Scheduled a satisfaction survey call",
        "Booked a follow-up survey.",
        'schedule_survey_call(slot="tomorrow 09:00")',
    ),
    (
        "Changed the preferred language",
        "Switched the profile language to French.",
        'update_profile(language="fr")',
    ),
    (
        "Shared a weather forecast",
        "Talked about tomorrow's weather.",
        "Looks like sunshine and 24 degrees tomorrow, perfect for a walk.",
    ),
    (
        "Exported the chat log to a spreadsheet",
        "Copied the transcript into a shared sheet.",
        'export_transcript(format="xlsx", share_with="everyone")',
    ),
    (
        "Recommended a podcast",
        "Suggested a lifestyle podcast episode.",
        "If you like, the latest episode of our lifestyle podcast is great listening.",
    ),
)


# --------------------------------------------------------------------------- editing


@dataclass
class _N:
    id: str
    label: str
    description: str
    type: str | None
    gold: str | None
    group: object  # nodes of one group share a step
    spans: list[list[int]]

    @property
    def start(self) -> int:
        return min(s[0] for s in self.spans)


@dataclass
class _Doc:
    """A mutable observed document whose spans follow every text edit."""

    kind: str
    text: str
    nodes: list[_N]
    edges: list[Edge]
    invariants: dict[str, float]
    output: str | None
    contract: str | None
    query: str | None
    _fresh: int = field(default=0)

    @classmethod
    def of(cls, obs: Observed) -> _Doc:
        return cls(
            kind=obs.kind,
            text=obs.text,
            nodes=[
                _N(
                    n.id,
                    n.label,
                    n.description,
                    n.type,
                    n.gold,
                    ("step", n.step),
                    [[s.start, s.end] for s in n.evidence],
                )
                for n in obs.nodes
            ],
            edges=[Edge(e.source, e.target, e.kind) for e in obs.edges],
            invariants=dict(obs.invariants),
            output=obs.output,
            contract=obs.contract,
            query=obs.query,
        )

    def by_gold(self, gold: str) -> list[_N]:
        return [n for n in self.nodes if n.gold == gold]

    def node(self, nid: str) -> _N:
        return next(n for n in self.nodes if n.id == nid)

    def new_id(self) -> str:
        taken = {n.id for n in self.nodes}
        while True:
            self._fresh += 1
            nid = f"p{self._fresh}"
            if nid not in taken:
                return nid

    # -- primitive edit: every span follows it
    def replace(self, start: int, end: int, new: str) -> None:
        delta = len(new) - (end - start)
        self.text = self.text[:start] + new + self.text[end:]
        for n in self.nodes:
            kept = []
            for s in n.spans:
                a, b = s
                if start == end:  # insertion
                    if a >= start:
                        a, b = a + delta, b + delta
                    elif b > start:
                        b += delta
                elif b <= start:
                    pass
                elif a >= end:
                    a, b = a + delta, b + delta
                elif a >= start and b <= end:
                    continue  # inside the removed text
                else:  # partial overlap: keep what lies outside
                    a = a if a < start else start + len(new)
                    b = b + delta if b > end else start
                if a < b:
                    kept.append([a, b])
            n.spans = kept
        self.nodes = [n for n in self.nodes if n.spans]

    # -- units: the text a node stands for
    def unit(self, n: _N) -> tuple[int, int] | None:
        """The contiguous text of ``n`` with its separator, or None if it is scattered."""
        ranges = sorted(self._unit_of_span(a, b) for a, b in n.spans)
        lo, hi = ranges[0]
        for a, b in ranges[1:]:
            if a > hi:
                return None
            hi = max(hi, b)
        return lo, hi

    def _unit_of_span(self, a: int, b: int) -> tuple[int, int]:
        t = self.text
        if self.kind == "trace":
            lo = t.rfind("\n", 0, a) + 1
            hi = t.find("\n", max(b - 1, a))
            hi = len(t) if hi < 0 else hi + 1
            first = t[lo:hi]
            while hi < len(t) and (
                t.startswith("  ", hi)
                or (first.startswith("[tool]") and t.startswith("[result]", hi))
            ):
                nxt = t.find("\n", hi)
                end = len(t) if nxt < 0 else nxt + 1
                if self._touched(hi, end):
                    break
                hi = end
            return lo, hi
        # response: the span and one adjacent space
        if b < len(t) and t[b] == " ":
            return a, b + 1
        if a > 0 and t[a - 1] == " ":
            return a - 1, b
        return a, b

    def _touched(self, a: int, b: int) -> bool:
        return any(s[0] < b and s[1] > a for n in self.nodes for s in n.spans)

    def remove(self, victims: list[_N]) -> int | None:
        """Remove nodes and their text; returns where the first removed text stood."""
        units = []
        for n in victims:
            u = self.unit(n)
            if u is None:
                return None
            units.append(u)
        gone = {n.id for n in victims}
        self.nodes = [n for n in self.nodes if n.id not in gone]
        self.edges = [e for e in self.edges if e.source not in gone and e.target not in gone]
        merged: list[list[int]] = []
        for a, b in sorted(units):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in reversed(merged):
            self.replace(a, b, "")
        first = merged[0][0] if merged else None
        if first is not None and self.kind == "response":
            if first >= len(self.text.rstrip(" ")):
                # the removed sentences ended the text: drop the space left before them
                self.text = self.text.rstrip(" ")
            first = min(first, len(self.text))
        return first

    def insert(self, pos: int, pieces: list[tuple[_N | None, str]]) -> None:
        """Insert text units at ``pos`` (a unit boundary); a piece with a node is its
        whole evidence."""
        if self.kind == "trace":
            if pos > 0 and self.text[pos - 1] != "\n":
                pos = self.text.find("\n", pos)
                pos = len(self.text) if pos < 0 else pos + 1
            chunks = [p[1] + "\n" for p in pieces]
            prefix = "" if pos == 0 or self.text[pos - 1] == "\n" else "\n"
            off = pos + len(prefix)
            block = prefix + "".join(chunks)
            self.replace(pos, pos, block)
            for (node, line), chunk in zip(pieces, chunks, strict=True):
                if node is not None:
                    node.spans = [[off, off + len(line)]]
                    self.nodes.append(node)
                off += len(chunk)
            return
        sentences = [p[1] for p in pieces]
        pos = min(pos, len(self.text))  # remove() may have trimmed a trailing space
        at_end = pos >= len(self.text)
        block = (
            (" " if at_end and self.text else "") + " ".join(sentences) + ("" if at_end else " ")
        )
        off = pos + (1 if at_end and self.text else 0)
        self.replace(pos, pos, block)
        for node, sentence in pieces:
            if node is not None:
                node.spans = [[off, off + len(sentence)]]
                self.nodes.append(node)
            off += len(sentence) + 1

    def cut(self, n: _N) -> tuple[str, list[list[int]]] | None:
        u = self.unit(n)
        if u is None:
            return None
        a, b = u
        seg = self.text[a:b]
        rel = [[s[0] - a, s[1] - a] for s in n.spans]
        others = [
            m for m in self.nodes if m is not n and any(s[0] < b and s[1] > a for s in m.spans)
        ]
        if others:
            return None
        self.nodes.remove(n)
        self.replace(a, b, "")
        if self.kind == "response":
            seg = seg.strip(" ")
        elif not seg.endswith("\n"):
            seg += "\n"
        n.spans = rel
        return seg, rel

    def paste(self, n: _N, pos: int, seg: str) -> None:
        if self.kind == "response":
            at_end = pos >= len(self.text)
            block = (" " + seg) if at_end else (seg + " ")
            off = pos + (1 if at_end else 0)
        else:
            block, off = seg, pos
        self.replace(pos, pos, block)
        n.spans = [[s[0] + off, s[1] + off] for s in n.spans]
        self.nodes.append(n)

    def observed(self) -> Observed:
        nodes = sorted(self.nodes, key=lambda n: (n.start, n.id))
        steps: dict[object, int] = {}
        out = []
        for i, n in enumerate(nodes):
            step = steps.setdefault(n.group, len(steps))
            out.append(
                ObservedNode(
                    n.id,
                    n.label,
                    [Span(a, b, self.text[a:b]) for a, b in sorted(n.spans)],
                    step,
                    n.description,
                    n.type,
                    n.gold,
                    i,
                )
            )
        return Observed(
            kind=self.kind,
            text=self.text,
            nodes=out,
            edges=[e for e in self.edges if {e.source, e.target} <= {n.id for n in out}],
            invariants=dict(self.invariants),
            output=self.output,
            contract=self.contract,
            query=self.query,
        )


# --------------------------------------------------------------------------- generators


@dataclass
class _Ctx:
    contract: Contract
    expected: Expected
    clean: Case
    rng: random.Random

    def doc(self) -> _Doc:
        return _Doc.of(self.clean.observed)


# A candidate: its label location and a maker of the perturbed document (None: n/a).
Candidate = tuple[str, Callable[[], "Observed | None"]]


def _omission(ctx: _Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    req = set(e.required)
    gold = {n.gold for n in ctx.clean.observed.nodes}
    for n in e.nodes:
        node = c.by_id[n]
        if n not in req or node.checked_output or n not in gold:
            continue
        if any(k in e.active and c.by_id[k].required for k in c.children[n]):
            continue

        def make(n: str = n) -> Observed | None:
            d = ctx.doc()
            return None if d.remove(d.by_gold(n)) is None else d.observed()

        yield n, make


def _enactment(node: Any, rng: random.Random) -> str:
    en = node.meta.get("enactment")
    if isinstance(en, list) and en:
        return str(rng.choice(en))
    if isinstance(en, str) and en.strip():
        return en.strip()
    label = node.label.rstrip(".")
    return f"{label}: {node.description.rstrip('.')}." if node.description else f"{label}."


def _branch_steps(c: Contract, outcome: str) -> list[str]:
    """B' and the required nodes below it; nested decisions take their first outcome."""
    out = [outcome]
    stack = list(reversed(c.children[outcome]))
    while stack:
        n = stack.pop()
        node = c.by_id[n]
        if node.type == "branch_condition" and c.by_id[node.parent or ""].type == "decision":
            if c.outcomes[node.parent or ""][0] != n:
                continue
        if node.required and not node.checked_output:
            out.append(n)
        stack.extend(reversed(c.children[n]))
    return out


def _wrong_branch(ctx: _Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    for d, pick in e.decisions.items():
        inside = set(e.subtree(pick))
        for alt in c.outcomes[d]:
            if alt == pick:
                continue

            def make(d: str = d, alt: str = alt, inside: set[str] = inside) -> Observed | None:
                doc = ctx.doc()
                victims = [n for n in doc.nodes if n.gold in inside]
                pos = doc.remove(victims) if victims else None
                if victims and pos is None:
                    return None
                if pos is None:
                    own = doc.by_gold(d)
                    u = doc.unit(own[0]) if own else None
                    pos = u[1] if u else len(doc.text)
                pieces: list[tuple[_N | None, str]] = []
                group = ("inserted", d)
                for x in _branch_steps(c, alt):
                    node = c.by_id[x]
                    text = _enactment(node, ctx.rng)
                    if doc.kind == "trace":
                        text = tag("tool" if is_call(text) else "assistant") + text
                    pieces.append(
                        (
                            _N(
                                doc.new_id(),
                                node.label,
                                node.description,
                                node.type,
                                x,
                                (group, x),
                                [],
                            ),
                            text,
                        )
                    )
                doc.insert(pos, pieces)
                return doc.observed()

            yield d, make


def _ordering(ctx: _Ctx) -> Iterator[Candidate]:
    e = ctx.expected
    base = evaluate_detailed(e, ctx.clean.observed, mode="oracle")
    pairs = base.alignment.pairs
    for edge in e.edges:
        if edge.kind not in ("requires", "enables"):
            continue
        u, v = edge.source, edge.target
        if u not in pairs or v not in pairs or base.pos[u] == base.pos[v]:
            continue
        if base.status.get(u) != "direct" or base.status.get(v) != "direct":
            continue

        def make(u: str = u, v: str = v) -> Observed | None:
            return _move(ctx, pairs[v], before=pairs[u])

        def make_after(u: str = u, v: str = v) -> Observed | None:
            return _move(ctx, pairs[u], after=pairs[v])

        yield f"{u}->{v}", make
        yield f"{u}->{v}", make_after


def _move(
    ctx: _Ctx, mover: str, *, before: str | None = None, after: str | None = None
) -> Observed | None:
    doc = ctx.doc()
    node = doc.node(mover)
    cut = doc.cut(node)
    if cut is None:
        return None
    seg, _ = cut
    anchor = doc.node(before or after or "")
    u = doc.unit(anchor)
    if u is None:
        return None
    node.group = ("moved", mover)
    # Before the anchor's text, or right after it (its unit ends at the next unit).
    pos = u[0] if before is not None else u[1]
    doc.paste(node, pos, seg)
    return doc.observed()


def _extra_action(ctx: _Ctx) -> Iterator[Candidate]:
    c = ctx.contract
    declared = [tokens(f"{n.label} {n.description}") for n in c.nodes]
    taken = {n.id for n in ctx.clean.observed.nodes}
    nid = next(f"x{i}" for i in range(1, len(taken) + 2) if f"x{i}" not in taken)
    for label, desc, text in UNSUPPORTED_ACTIONS:
        t = tokens(f"{label} {desc} {text}")
        if any(sim(t, d) >= THRESHOLD for d in declared):
            continue

        def make(label: str = label, desc: str = desc, text: str = text) -> Observed | None:
            doc = ctx.doc()
            bounds = sorted({u[0] for n in doc.nodes if (u := doc.unit(n))} | {len(doc.text)})
            pos = ctx.rng.choice(bounds)
            if doc.kind == "trace":
                line = tag("tool" if is_call(text) else "assistant") + text
            else:
                line = f"{label}." if is_call(text) else text
            doc.insert(pos, [(_N(nid, label, desc, "action", None, ("extra", nid), []), line)])
            return doc.observed()

        yield nid, make


def _invariant(ctx: _Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    by_id = {i.id: i for i in c.invariants}
    for i in e.invariants:
        inv = by_id[i]

        def make(inv: Any = inv) -> Observed | None:
            doc = ctx.doc()
            check = inv.check or {}
            if "forbid_regex" in check:
                example = check.get("violation_example")
                if not example:
                    return None
                return _append_to_last_assistant(doc, example)
            if "require_regex" in check:
                return _delete_matches(doc, check["require_regex"])
            doc.invariants[inv.id] = 0.0
            return doc.observed()

        yield i, make


def _append_to_last_assistant(doc: _Doc, example: str) -> Observed | None:
    t = doc.text
    if doc.kind == "trace":
        said = [e for e in events(t) if e.role == "assistant"]
        if not said:
            return None
        pos = said[-1].end
    else:
        pos = len(t.rstrip())
    if doc.kind == "response" and not example.startswith(" "):
        example = " " + example
    holders = [n for n in doc.nodes for s in n.spans if s[1] == pos]
    doc.replace(pos, pos, example)
    for n in holders:
        for s in n.spans:
            if s[1] == pos:
                s[1] = pos + len(example)
    return doc.observed()


def _delete_matches(doc: _Doc, rx: str) -> Observed | None:
    # The evaluator's regex engine, so what is deleted is exactly what a check finds.
    try:
        matches = [(a, b) for a, b in checks.spans(rx, doc.text) if b > a]
        if doc.output is not None:
            cut = checks.spans(rx, doc.output)
            doc.output = "".join(doc.output[a:b] for a, b in _gaps(cut, len(doc.output)))
    except checks.CheckTimeout:
        return None
    for a, b in reversed(matches):
        doc.replace(a, b, "")
    return doc.observed()


def _gaps(cuts: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The intervals of ``[0, size)`` outside the sorted, disjoint ``cuts``."""
    out, pos = [], 0
    for a, b in cuts:
        out.append((pos, a))
        pos = b
    out.append((pos, size))
    return out


def _output(ctx: _Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    for n in e.nodes:
        node = c.by_id[n]
        if not node.checked_output:
            continue
        for how in ctx.rng.sample(["drop_key", "wrong_type", "not_json"], 3):

            def make(node: Any = node, how: str = how) -> Observed | None:
                doc = ctx.doc()
                doc.output = _corrupt(doc.output, node.meta, how, ctx.rng)
                return None if doc.output is None else doc.observed()

            yield n, make


def _corrupt(output: str | None, meta: dict[str, Any], how: str, rng: random.Random) -> str | None:
    if output is None:
        return None
    schema = meta.get("json_schema")
    if how == "not_json":
        if schema is None and "regex" in meta:
            return output + " (draft)"
        return output.rstrip().rstrip("}") + ", <truncated"
    if schema is None:
        return None
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    required = [k for k in schema.get("required", []) if k in value]
    if how == "drop_key":
        if not required:
            return None
        key = rng.choice(required)
        value = {k: v for k, v in value.items() if k != key}
        return json.dumps(value)
    props = schema.get("properties", {})
    keys = [k for k in required if k in props] or [k for k in value if k in props]
    if not keys:
        return None
    key = rng.choice(keys)
    current = value[key]
    value = copy.deepcopy(value)
    value[key] = [current] if not isinstance(current, list) else {"value": current}
    return json.dumps(value)


_GENERATORS: dict[str, Callable[[_Ctx], Iterator[Candidate]]] = {
    "omission": _omission,
    "wrong_branch": _wrong_branch,
    "ordering": _ordering,
    "extra_action": _extra_action,
    "invariant_violation": _invariant,
    "output_contract": _output,
}


def perturb_case(
    contract: Contract,
    clean: Case,
    family: str,
    *,
    seed: int = 0,
    expected: Expected | None = None,
) -> Case | None:
    """One perturbed case of ``family`` made from ``clean``, or None (skipped)."""
    if family not in _GENERATORS:
        raise ValueError(f"unknown family {family!r}: expected one of {FAMILIES}")
    e = expected or condition(contract, clean.query)
    rng = random.Random(f"{seed}:{clean.id}:{family}")
    ctx = _Ctx(contract, e, clean, rng)
    candidates = list(_GENERATORS[family](ctx))
    rng.shuffle(candidates)
    for location, make in candidates:
        obs = make()
        if obs is None:
            continue
        result = evaluate_detailed(e, obs, mode="oracle")
        got = [(f["family"], f["location"]) for f in result.failures]
        if got == [(family, location)] and not result.alignment.dropped:
            return Case(
                id="",
                contract=clean.contract,
                query=clean.query,
                observed=obs,
                clean=False,
                family=family,
                location=location,
            )
    return None
