"""A mutable observed document for the perturbation generators.

Every edit of the source text (:meth:`Doc.replace`, :meth:`Doc.insert`,
:meth:`Doc.remove`, :meth:`Doc.move`) moves the evidence spans with it; steps are
renumbered in text order when the document is turned back into an
:class:`~matching.model.Observed` (ALGORITHMS.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Edge, Observed, ObservedNode, Span


@dataclass
class DocNode:
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
class Doc:
    """A mutable observed document whose spans follow every text edit."""

    kind: str
    text: str
    nodes: list[DocNode]
    edges: list[Edge]
    invariants: dict[str, float]
    output: str | None
    contract: str | None
    query: str | None
    _fresh: int = field(default=0)

    @classmethod
    def of(cls, obs: Observed) -> Doc:
        return cls(
            kind=obs.kind,
            text=obs.text,
            nodes=[
                DocNode(
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

    def by_gold(self, gold: str) -> list[DocNode]:
        return [n for n in self.nodes if n.gold == gold]

    def node(self, nid: str) -> DocNode:
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
    def unit(self, n: DocNode) -> tuple[int, int] | None:
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

    def remove(self, victims: list[DocNode]) -> int | None:
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

    def insert(self, pos: int, pieces: list[tuple[DocNode | None, str]]) -> None:
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

    def cut(self, n: DocNode) -> tuple[str, list[list[int]]] | None:
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

    def paste(self, n: DocNode, pos: int, seg: str) -> None:
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
