"""Robustness variants of a suite: the same cases, written the way other agents write.

Each variant is a fixed, general transformation of a case's rendered trace (FORMAT.md
§4), seeded where it draws anything, and never tuned on how the engine scores the
result: the labels stay as they were, and every observed node keeps evidence quoting
the same words (``voice``: the rewritten sentence).

- ``merged``: consecutive ``[assistant]`` lines joined into one (one message per turn);
  the observed nodes of a joined line share one step.
- ``split``: an ``[assistant]`` line of two or more sentences becomes one line per
  sentence (the sentence splitter of :mod:`matching.extract`).
- ``voice``: agent text reworded by the general rules of ``data/voice.json``
  (:mod:`matching.perturb.voice`).
- ``json``: every ``[result]`` a long pretty-printed JSON document keeping the original
  values (:mod:`matching.perturb.longjson`); a ``[tool]`` call without a result gets one.

>>> from matching.model import Case, Observed, ObservedNode, Span
>>> text = "[user] Refund?\\n[assistant] I have checked it.\\n[assistant] It is refunded.\\n"
>>> nodes = [ObservedNode("o1", "check", [Span(15, 45)], 0),
...          ObservedNode("o2", "refund", [Span(46, 73)], 1)]
>>> case = Case("c/q/clean", "c", "q", Observed("trace", text, nodes), True)
>>> stats = Stats()
>>> new = merged(case, stats=stats)
>>> new.id, new.observed.text.splitlines()[1]
('c/q/clean:merged', '[assistant] I have checked it. It is refunded.')
>>> [(n.evidence[0].quote, n.step) for n in new.observed.nodes]
[('[assistant] I have checked it.', 0), ('It is refunded.', 0)]
>>> stats.lines_merged, stats.nodes_dropped
(1, 0)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..extract import sentence_spans
from ..formats import read_case
from ..model import Case, ObservedNode
from ..trace import Event, events, tag
from .longjson import call_result, long_result
from .rewrite import Builder, Piece, remap, words
from .voice import DIRECTIONS, load_rules, rewrite_message

KINDS = ("merged", "split", "voice", "json")
Progress = Callable[[int, int], None]


@dataclass
class Stats:
    """What a variant changed, summed over the cases it rewrote."""

    cases: int = 0
    changed: int = 0  # cases whose text differs
    lines_merged: int = 0  # [assistant] lines joined onto the line before
    lines_split: int = 0  # [assistant] lines added by splitting
    sentences_reworded: int = 0
    sentences_left_out: int = 0
    results_rewritten: int = 0
    results_added: int = 0
    nodes_dropped: int = 0  # no word of their evidence is left
    quotes_changed: int = 0  # nodes whose evidence words differ (voice only)
    dropped: list[str] = field(default_factory=list)  # "<case id>#<node id>"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _node_words(text: str, node: ObservedNode) -> list[str]:
    return words("\n".join(text[s.start : s.end] for s in node.evidence))


def _finish(
    case: Case,
    kind: str,
    built: tuple[str, list[Piece]],
    stats: Stats,
    step_of: Callable[[ObservedNode], object] | None = None,
) -> Case:
    """The variant case: ``case`` over the rewritten text, counted in ``stats``."""
    text, pieces = built
    old = case.observed
    obs, dropped = remap(old, text, pieces, step_of)
    before = {n.id: _node_words(old.text, n) for n in old.nodes}
    stats.cases += 1
    stats.changed += text != old.text
    stats.nodes_dropped += len(dropped)
    stats.dropped += [f"{case.id}#{i}" for i in dropped]
    stats.quotes_changed += sum(_node_words(text, n) != before[n.id] for n in obs.nodes)
    return Case(
        id=f"{case.id}:{kind}",
        contract=case.contract,
        query=case.query,
        observed=obs,
        clean=case.clean,
        family=case.family,
        location=case.location,
    )


# --------------------------------------------------------------------------- the kinds


def _assistant_runs(text: str) -> list[list[Event]]:
    """Runs of two or more consecutive ``[assistant]`` events."""
    runs: list[list[Event]] = [[]]
    for e in events(text):
        if e.role == "assistant":
            runs[-1].append(e)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if len(r) > 1]


def merged(case: Case, *, seed: int = 0, stats: Stats | None = None) -> Case:
    """Consecutive ``[assistant]`` lines joined into one, words separated by a space.

    Parameters
    ----------
    case : Case
    seed : int
        Unused (nothing is drawn); accepted so every kind is called alike.
    stats : Stats, optional
        Counts to add to.

    Returns
    -------
    Case
        Id ``<id>:merged``; the nodes of a joined line share one step.
    """
    stats = Stats() if stats is None else stats
    text = case.observed.text
    b = Builder(text)
    runs = _assistant_runs(text)
    for run in runs:
        for prev, e in zip(run, run[1:], strict=False):
            b.delete(prev.end, e.start + e.tag_length)  # line break(s) and the tag
            b.insert(" ")
        stats.lines_merged += len(run) - 1
    ranges = [(r[0].start, r[-1].end) for r in runs]

    def step_of(n: ObservedNode) -> object:
        at = n.evidence[0].start if n.evidence else -1
        hit = [i for i, (a, z) in enumerate(ranges) if a <= at < z]
        return ("line", hit[0]) if hit else ("step", n.step)

    return _finish(case, "merged", b.finish(), stats, step_of)


def split(case: Case, *, seed: int = 0, stats: Stats | None = None) -> Case:
    """Each ``[assistant]`` line of two or more sentences split into one line each.

    Parameters
    ----------
    case : Case
    seed : int
        Unused (nothing is drawn); accepted so every kind is called alike.
    stats : Stats, optional
        Counts to add to.

    Returns
    -------
    Case
        Id ``<id>:split``. A node keeps its step (steps renumbered ``0, 1, …`` in the
        old order); a node whose quote spanned a split gets one span per line.
    """
    stats = Stats() if stats is None else stats
    text = case.observed.text
    b = Builder(text)
    for e in events(text):
        if e.role != "assistant":
            continue
        body = e.start + e.tag_length
        spans = list(sentence_spans(text[body : e.end], body))
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            b.delete(end, start)
            b.insert("\n" + tag("assistant"))
        stats.lines_split += max(0, len(spans) - 1)
    return _finish(case, "split", b.finish(), stats)


def voice(case: Case, *, seed: int = 0, stats: Stats | None = None) -> Case:
    """The agent's text (``[assistant]`` lines, or a whole response) reworded.

    Parameters
    ----------
    case : Case
    seed : int
        With the case id, seeds every choice (``Random(f"{seed}:{id}:voice")``).
    stats : Stats, optional
        Counts to add to.

    Returns
    -------
    Case
        Id ``<id>:voice``; a node whose sentence was reworded quotes the new sentence.
    """
    stats = Stats() if stats is None else stats
    rules = load_rules()
    rng = random.Random(f"{seed}:{case.id}:voice")
    direction = rng.choice(DIRECTIONS)
    text = case.observed.text
    b = Builder(text)
    messages = [
        (e.start + e.tag_length, e.end) for e in events(text) if e.role in ("assistant", None)
    ]
    for start, end in messages:
        stats.sentences_left_out += rewrite_message(b, start, end, rng, direction, rules)
    if messages and rng.random() < rules.closer_add_rate:
        b.insert(" " + rng.choice(rules.closers), at=messages[-1][1])
    built = b.finish()
    stats.sentences_reworded += sum(
        1 for p in built[1] if p.new and not p.copied and p.old_end > p.old_start
    )
    return _finish(case, "voice", built, stats)


def _indented(doc: str) -> str:
    """Continuation lines indented by two spaces (FORMAT.md §4)."""
    return "\n  ".join(doc.split("\n"))


def json_results(case: Case, *, seed: int = 0, stats: Stats | None = None) -> Case:
    """Every ``[result]`` a long pretty-printed JSON document; a call without one gets one.

    Parameters
    ----------
    case : Case
    seed : int
        With the case id, seeds every extra value (``Random(f"{seed}:{id}:json")``).
    stats : Stats, optional
        Counts to add to.

    Returns
    -------
    Case
        Id ``<id>:json``; no node's evidence moves off its words (results are no nodes).
    """
    stats = Stats() if stats is None else stats
    rng = random.Random(f"{seed}:{case.id}:json")
    text = case.observed.text
    b = Builder(text)
    evs = list(events(text))
    for i, e in enumerate(evs):
        if e.role == "result":
            body = e.start + e.tag_length
            b.replace(body, e.end, _indented(long_result(text[body : e.end], rng)))
            stats.results_rewritten += 1
        elif e.role == "tool" and not (i + 1 < len(evs) and evs[i + 1].role == "result"):
            doc = call_result(text[e.start : e.end], rng)
            b.insert("\n" + tag("result") + _indented(doc), at=e.end)
            stats.results_added += 1
    return _finish(case, "json", b.finish(), stats)


VARIANTS: dict[str, Callable[..., Case]] = {
    "merged": merged,
    "split": split,
    "voice": voice,
    "json": json_results,
}


# --------------------------------------------------------------------------- suites


def make_variant(case: Case, kind: str, *, seed: int = 0, stats: Stats | None = None) -> Case:
    """The ``kind`` variant of ``case``, checked to read back as a valid case.

    Parameters
    ----------
    case : Case
    kind : {"merged", "split", "voice", "json"}
    seed : int
    stats : Stats, optional

    Returns
    -------
    Case

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    ContractEvalError
        When the variant is not a valid case document (a bug, never expected).
    """
    if kind not in VARIANTS:
        raise ValueError(f"unknown variant {kind!r}: expected one of {KINDS}")
    new = VARIANTS[kind](case, seed=seed, stats=stats)
    read_case(new.to_dict(), file=new.id)  # FORMAT.md §6, schema included
    return new


def variant_cases(
    cases: Iterable[Case], kind: str, *, seed: int = 0, progress: Callable[[], None] | None = None
) -> tuple[list[Case], Stats]:
    """The ``kind`` variant of every case, in order, and what it changed."""
    stats = Stats()
    out = []
    for case in cases:
        out.append(make_variant(case, kind, seed=seed, stats=stats))
        if progress:
            progress()
    return out, stats


def write_variants(
    suite_path: Path,
    kinds: Iterable[str],
    out: Path,
    *,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write ``out/<kind>/``, a suite folder per kind: contracts copied, cases rewritten.

    Parameters
    ----------
    suite_path : pathlib.Path
        A suite folder (FORMAT.md §7).
    kinds : iterable of str
    out : pathlib.Path
    seed : int
    progress : callable, optional
        Called with ``(cases done, cases)`` over all kinds.

    Returns
    -------
    dict
        ``{"suite", "seed", "kinds": {kind: {"out": folder, **counts}}}``.
    """
    from ..suite import load_suite, write_suite

    suite = load_suite(Path(suite_path))
    kinds = list(kinds)
    total, done = len(kinds) * len(suite.cases), 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    summary: dict[str, Any] = {"suite": str(suite_path), "seed": seed, "kinds": {}}
    for kind in kinds:
        cases, stats = variant_cases(suite.cases, kind, seed=seed, progress=step)
        folder = Path(out) / kind
        write_suite(folder, suite.contracts.values(), cases)
        counts = stats.to_dict()
        counts["dropped"] = counts["dropped"][:20]
        summary["kinds"][kind] = {"out": str(folder), **counts}
    return summary
