"""A reviewer's corrections of an alignment: forced pairs and refused pairs.

A reviewer who reads a run can pair an unpaired observed step with an obligation, or
unpair a wrong pairing. :func:`correct` applies those decisions to the automatic
alignment; :func:`matching.evaluate.evaluate_detailed` takes them as ``corrections``
and scores the corrected alignment exactly as it scores an automatic one.

- a forced pair (e, o) replaces e's automatic pair; the observed step e had before is
  then a repeat of e, and o leaves whatever it was (repeat, wrong branch, extra);
  its score is 1.0 (a reviewer's reading);
- a refused pair (e, o) removes that pair: o becomes an extra action, e is unpaired;
- a commentary step o enacts nothing and is no action either: it leaves the alignment
  (listed among the dropped observed nodes), so whatever it was paired with is unpaired
  and it is never an extra action.

>>> from pathlib import Path
>>> from matching.conditioning import condition
>>> from matching.formats import read_observed
>>> from matching.match import align
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> e = condition(load_contract(data / "refund-mini.json"), "q1")
>>> obs = read_observed(data / "refund-mini-observed-q1.json")
>>> m = correct(align(e, obs), e, Corrections(unpair=[("check_window", "o3")]))
>>> "check_window" in m.pairs, m.extra
(False, ['o3'])
>>> m = correct(align(e, obs), e, Corrections(commentary=["o3"]))
>>> m.extra, m.dropped[-1]
([], ('o3', 'commentary, by a reviewer'))
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .conditioning import Expected
    from .match import Alignment

COMMENTARY = "commentary, by a reviewer"


@dataclass
class Corrections:
    """Forced pairs ``pair`` and refused pairs ``unpair``, as (expected id, observed id),
    and the observed steps a reviewer read as ``commentary``."""

    pair: list[tuple[str, str]] = field(default_factory=list)
    unpair: list[tuple[str, str]] = field(default_factory=list)
    commentary: list[str] = field(default_factory=list)

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> Corrections:
        """From ``{"pair": [[e, o], ...], "unpair": [[e, o], ...], "commentary": [o, ...]}``
        (stored JSON)."""
        data = data or {}
        return cls(
            pair=[(str(e), str(o)) for e, o in data.get("pair", [])],
            unpair=[(str(e), str(o)) for e, o in data.get("unpair", [])],
            commentary=[str(o) for o in data.get("commentary", [])],
        )

    def to_data(self) -> dict[str, Any]:
        return {
            "pair": [list(p) for p in self.pair],
            "unpair": [list(p) for p in self.unpair],
            "commentary": list(self.commentary),
        }

    def merged(self, more: Corrections) -> Corrections:
        """These corrections followed by ``more``: a later decision about an obligation
        or a step replaces an earlier one.

        >>> a = Corrections(pair=[("e1", "o1")], commentary=["o2"])
        >>> a.merged(Corrections(pair=[("e2", "o2")], unpair=[("e1", "o1")])).to_data()
        {'pair': [['e2', 'o2']], 'unpair': [['e1', 'o1']], 'commentary': []}
        """
        pair = [p for p in self.pair if p not in more.unpair]
        for e, o in more.pair:
            pair = [(x, y) for x, y in pair if x != e and y != o] + [(e, o)]
        unpair = [p for p in self.unpair if p not in more.pair]
        unpair += [p for p in more.unpair if p not in unpair]
        touched = {o for _, o in more.pair}
        commentary = [o for o in self.commentary if o not in touched]
        commentary += [o for o in more.commentary if o not in commentary]
        pair = [(e, o) for e, o in pair if o not in more.commentary]
        return Corrections(pair=pair, unpair=unpair, commentary=commentary)

    def __bool__(self) -> bool:
        return bool(self.pair or self.unpair or self.commentary)


def check(m: Alignment, expected: Expected, corrections: Corrections) -> None:
    """Raise ``ValueError`` naming the first correction that names an obligation that is
    not active for the query or an observed step the run does not keep."""
    kept = {o.id for o in m.kept}
    for e, o in [*corrections.pair, *corrections.unpair]:
        if e not in expected.active:
            raise ValueError(f"{e!r} is not an active obligation of query {expected.query.id!r}")
        if o not in kept:
            raise ValueError(f"{o!r} is not an observed step of this run")
    for o in corrections.commentary:
        if o not in kept:
            raise ValueError(f"{o!r} is not an observed step of this run")


def correct(m: Alignment, expected: Expected, corrections: Corrections) -> Alignment:
    """A copy of ``m`` with ``corrections`` applied (see the module docstring)."""
    check(m, expected, corrections)
    out = copy.deepcopy(m)
    pairs = dict(out.pairs)
    displaced: list[tuple[str, str]] = []
    for e, o in corrections.unpair:
        if pairs.get(e) == o:
            del pairs[e]
    for e, o in corrections.pair:
        for x, y in list(pairs.items()):
            if y == o:
                del pairs[x]
        if e in pairs and pairs[e] != o:
            displaced.append((pairs[e], e))
        pairs[e] = o
    said = set(corrections.commentary)
    pairs = {e: o for e, o in pairs.items() if o not in said}
    if said:
        out.kept = [n for n in out.kept if n.id not in said]
        out.dropped = [*out.dropped, *((o, COMMENTARY) for o in corrections.commentary)]
        out.repeats = [(o, of) for o, of in out.repeats if o not in said]
        out.shared = {e: o for e, o in out.shared.items() if o not in said}
    forced = {o for _, o in corrections.pair} | said
    by_hand = {e for e, _ in corrections.pair}
    out.pairs = {e: pairs[e] for e in expected.nodes if e in pairs}
    out.scores = {e: 1.0 if e in by_hand else m.scores.get(e, 1.0) for e in out.pairs}
    out.repeats = [(o, of) for o, of in out.repeats if o not in forced] + displaced
    out.wrong_branch_of = {o: n for o, n in out.wrong_branch_of.items() if o not in forced}
    out.offered = {o: n for o, n in out.offered.items() if o not in forced}
    out.wrong_branch = {d: [o for o in os if o not in forced] for d, os in out.wrong_branch.items()}
    out.wrong_branch = {d: os for d, os in out.wrong_branch.items() if os}
    by_id = expected.contract.by_id
    out.consumed_output = [o for e, o in out.pairs.items() if by_id[e].checked_output]
    consumed = set(out.paired_observed) | {o for o, _ in out.repeats} | set(out.wrong_branch_of)
    out.extra = [n.id for n in out.kept if n.id not in consumed]
    out.margins = {e: v for e, v in m.margins.items() if e in out.pairs and e not in by_hand}
    out.first_step = {
        e: v
        for e, v in m.first_step.items()
        if e not in by_hand and out.pairs.get(e) == m.pairs.get(e)
    }
    return out
