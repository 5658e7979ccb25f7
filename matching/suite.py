"""Suites (FORMAT.md §7): loading, perturbing, running and scoring (ALGORITHMS.md §6).

>>> verdicts = [CaseResult("a", True, None, None, "clean", []),
...             CaseResult("b", False, "omission", "x", "non_clean", [("omission", "x")]),
...             CaseResult("c", False, "ordering", "u->v", "clean", [])]
>>> s = score(verdicts)
>>> s["detection_accuracy"], s["balanced_detection_accuracy"], s["localization"]
(0.666667, 0.75, 0.5)
"""

from __future__ import annotations

import codecs
import json
import multiprocessing
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .conditioning import Expected, condition
from .errors import ContractEvalError
from .formats import Case, Contract, Observed, dumps, read_case
from .llm.errors import LLMError
from .perturb import FAMILIES, perturb_case
from .pipeline import Options, judge_trace
from .validate import load_contract

Progress = Callable[[int, int], None]


@dataclass
class Suite:
    contracts: dict[str, Contract]
    cases: list[Case]
    errors: list[dict[str, str]] = field(default_factory=list)  # unreadable case lines


@dataclass
class CaseResult:
    id: str
    clean: bool
    family: str | None
    location: str | None
    verdict: str | None  # None: the case errored
    failures: list[tuple[str, str]]
    error: str | None = None
    p_violation: float | None = None  # semantic mode: the confidence of the verdict


def load_suite(path: Path) -> Suite:
    """Read ``contracts/*.json`` (audited) and ``cases.jsonl`` of a suite folder.

    A contract that fails its audit stops the load (every case depends on it); a case
    line that cannot be read is recorded as an error and counts as wrong when scored.

    Parameters
    ----------
    path : pathlib.Path
        The suite folder.

    Returns
    -------
    Suite

    Raises
    ------
    ContractEvalError
        When the folder has no contracts, or a contract fails its audit.
    """
    path = Path(path)
    cdir = path / "contracts"
    if not cdir.is_dir():
        raise ContractEvalError(
            f"not a suite folder: {cdir} is missing", file=str(path), rule="suite"
        )
    contracts = _load_contracts(cdir)
    cases_file = path / "cases.jsonl"
    if not cases_file.is_file():
        raise ContractEvalError(
            f"not a suite folder: {cases_file} is missing", file=str(path), rule="suite"
        )
    suite = Suite(contracts, [])
    with cases_file.open("rb") as fh:
        _read_cases(_utf8_lines(fh, str(cases_file), suite), str(cases_file), suite)
    return suite


def _utf8_lines(raw_lines: Iterable[bytes], name: str, suite: Suite) -> Iterable[str]:
    """The lines as text; a line that is not UTF-8 is a case error (and an empty line)."""
    for lineno, raw in enumerate(raw_lines, 1):
        if lineno == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = f"{name}:{lineno}"
            suite.errors.append(
                {"id": where, "error": f"{where}: $: not UTF-8 text (byte {exc.start}) [encoding]"}
            )
            yield ""


def _load_contracts(cdir: Path) -> dict[str, Contract]:
    """Every ``*.json`` of a suite's contracts folder, audited, by id."""
    contracts: dict[str, Contract] = {}
    for f in sorted(cdir.glob("*.json")):
        c = load_contract(f)
        if c.id in contracts:
            raise ContractEvalError(
                f"duplicate contract id {c.id!r}", file=str(f), path="$.id", rule="unique-id"
            )
        contracts[c.id] = c
    return contracts


def _read_cases(lines: Iterable[str], name: str, suite: Suite) -> None:
    """Add the cases of ``cases.jsonl`` lines to ``suite``; unreadable ones become errors."""
    seen: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            case = read_case(line, file=where)
            if case.id in seen:
                raise ContractEvalError(
                    f"duplicate case id {case.id!r}", file=where, path="$.id", rule="unique-id"
                )
            if case.contract not in suite.contracts:
                raise ContractEvalError(
                    f"unknown contract {case.contract!r}",
                    file=where,
                    path="$.contract",
                    rule="unknown-id",
                )
            seen.add(case.id)
            suite.cases.append(case)
        except ContractEvalError as exc:
            suite.errors.append({"id": where, "error": str(exc)})


# --------------------------------------------------------------------------- perturb


def perturb_suite(
    suite: Suite,
    *,
    families: Sequence[str] = FAMILIES,
    seed: int = 0,
    progress: Progress | None = None,
) -> tuple[list[Case], dict[str, dict[str, int]]]:
    """Every clean case followed by one perturbed case per applicable family.

    Parameters
    ----------
    suite : Suite
    families : sequence of str
        Which families, in the order to generate them (:data:`~matching.model.FAMILIES`).
    seed : int
    progress : callable, optional
        Called with ``(clean cases done, clean cases)``.

    Returns
    -------
    cases : list of Case
        Ids ``<contract>/<query>/<family>-<n>``.
    counts : dict
        Family -> ``{"made": n, "skipped": n}``.
    """
    out: list[Case] = []
    counts = {f: {"made": 0, "skipped": 0} for f in families}
    numbers: dict[tuple[str, str, str], int] = defaultdict(int)
    clean = [c for c in suite.cases if c.clean]
    for i, case in enumerate(clean):
        contract = suite.contracts[case.contract]
        out.append(case)
        try:
            expected = condition(contract, case.query)
        except ContractEvalError:
            for f in families:
                counts[f]["skipped"] += 1
            continue
        for family in families:
            made = perturb_case(contract, case, family, seed=seed, expected=expected)
            if made is None:
                counts[family]["skipped"] += 1
                continue
            key = (case.contract, case.query, family)
            numbers[key] += 1
            made.id = f"{case.contract}/{case.query}/{family}-{numbers[key]}"
            counts[family]["made"] += 1
            out.append(made)
        if progress:
            progress(i + 1, len(clean))
    return out, counts


def write_suite(path: Path, contracts: Iterable[Contract], cases: Iterable[Case]) -> None:
    """Write a suite folder: ``contracts/<id>.json`` and ``cases.jsonl``.

    Parameters
    ----------
    path : pathlib.Path
    contracts : iterable of Contract
    cases : iterable of Case
    """
    path = Path(path)
    (path / "contracts").mkdir(parents=True, exist_ok=True)
    for c in contracts:
        (path / "contracts" / f"{c.id}.json").write_text(dumps(c.to_dict()), encoding="utf-8")
    with (path / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case.to_dict(), ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- run

_STATE: dict[str, Any] = {}


def _run_one(i: int) -> CaseResult:
    suite: Suite = _STATE["suite"]
    options: Options = _STATE["options"]
    cache: dict[tuple[str, str], Expected] = _STATE["cache"]
    case = suite.cases[i]
    try:
        key = (case.contract, case.query)
        if key not in cache:
            cache[key] = condition(suite.contracts[case.contract], case.query)
        contract = suite.contracts[case.contract]
        out = judge_trace(contract, case.query, case.observed, options, expected=cache[key])
        ev = out.evaluation
        fails = [(f["family"], f["location"]) for f in ev.failures]
        if options.extractor != "none":
            fails = gold_locations(fails, out.observed, case.observed)
        p = ev.confidence["p_violation"] if ev.confidence else None
        return CaseResult(
            case.id, case.clean, case.family, case.location, ev.verdict, fails, p_violation=p
        )
    except (ContractEvalError, ValueError, LLMError) as exc:
        # An LLM extractor's failure is one failed case: the run goes on and lists it.
        return CaseResult(case.id, case.clean, case.family, case.location, None, [], str(exc))


def gold_locations(
    failures: list[tuple[str, str]], extracted: Observed, gold: Observed
) -> list[tuple[str, str]]:
    """Extra actions located on extracted nodes, renamed to the gold observed node their
    evidence overlaps most (extracted ids never equal gold ids, so a located inserted
    step would otherwise never count as localised). Other failures are unchanged.

    >>> from matching.formats import ObservedNode, Span
    >>> g = Observed("trace", "ab cd", [ObservedNode("x1", "x", [Span(3, 5)], 0)])
    >>> e = Observed("trace", "ab cd", [ObservedNode("o2", "y", [Span(2, 5)], 0)])
    >>> gold_locations([("extra_action", "o2"), ("omission", "n")], e, g)
    [('extra_action', 'x1'), ('omission', 'n')]
    """
    spans = {n.id: n.evidence for n in extracted.nodes}
    out = []
    for fam, loc in failures:
        if fam == "extra_action" and loc in spans:
            best, most = loc, 0
            for n in gold.nodes:
                inter = sum(
                    max(0, min(a.end, b.end) - max(a.start, b.start))
                    for a in spans[loc]
                    for b in n.evidence
                )
                if inter > most:
                    best, most = n.id, inter
            loc = best
        out.append((fam, loc))
    return out


def _run_chunk(idx: Sequence[int]) -> list[CaseResult]:
    return [_run_one(i) for i in idx]


def run_suite(
    suite: Suite,
    *,
    mode: str = "token",
    extractor: str = "none",
    jobs: int = 1,
    progress: Progress | None = None,
    expected: dict[tuple[str, str], Expected] | None = None,
    semantic: Any = None,
) -> list[CaseResult]:
    """Evaluate every case of a suite.

    Parameters
    ----------
    suite : Suite
    mode : {"token", "oracle", "semantic"}
    extractor : str
        ``"none"`` to evaluate the cases' own observed graphs, else an extractor name
        (:data:`~matching.extractors.EXTRACTORS`) to re-extract them from their text.
    jobs : int
        More than 1 forks that many worker processes.
    progress : callable, optional
        ``(cases done, cases)`` as it goes.
    expected : dict, optional
        The expected graph of some ``(contract, query)`` keys (e.g. enactments removed
        or taught); the others are conditioned from the suite.
    semantic : matching.alignment.Setup, optional
        Semantic mode's pair model and knobs (cross-validation swaps them).

    Returns
    -------
    list of CaseResult
        One per case (an erroring case has verdict None and its error), then one per
        unreadable case line.
    """
    if mode == "semantic":  # a missing model stops the run here, not as 1400 errored cases
        from .embed import encoder

        encoder()
    _STATE.update(suite=suite, options=Options(mode=mode, extractor=extractor, semantic=semantic))
    _STATE["cache"] = dict(expected or {})
    n = len(suite.cases)
    results: list[CaseResult] = []
    chunk = max(1, min(200, n // (max(jobs, 1) * 8) or 1))
    chunks = [range(i, min(i + chunk, n)) for i in range(0, n, chunk)]
    if jobs > 1 and n > chunk:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs) as pool:
            for part in pool.imap(_run_chunk, chunks):
                results.extend(part)
                if progress:
                    progress(len(results), n)
    else:
        for idx in chunks:
            results.extend(_run_chunk(idx))
            if progress:
                progress(len(results), n)
    results += [CaseResult(e["id"], False, None, None, None, [], e["error"]) for e in suite.errors]
    return results


# --------------------------------------------------------------------------- score


def _share(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def detected(r: CaseResult) -> bool:
    """Whether the evaluator flagged the case (§6: a perturbed case is detected).

    >>> detected(CaseResult("c", False, "omission", "n1", "non_clean", []))
    True
    """
    return r.verdict == "non_clean"


def localised(r: CaseResult) -> bool:
    """Whether a reported failure names the case's own family and location (§6).

    >>> localised(CaseResult("c", False, "omission", "n1", "non_clean", [("omission", "n1")]))
    True
    """
    return (r.family, r.location) in r.failures


def exactly_localised(r: CaseResult) -> bool:
    """Whether the only failure reported is the case's own family and location (§6).

    >>> r = CaseResult("c", False, "omission", "n1", "non_clean", [("omission", "n1")])
    >>> exactly_localised(r)
    True
    """
    return set(r.failures) == {(r.family, r.location)}


def outcome(r: CaseResult, *, locations: bool = True) -> str:
    """A perturbed case's outcome: ``"localised"``, ``"detected"`` or ``"missed"``.

    An errored case is missed, as :func:`score` counts it; without ``locations`` (an
    evaluator naming a family only) a detected case is never localised.

    >>> outcome(CaseResult("c", False, "omission", "n1", "non_clean", [("ordering", "n2")]))
    'detected'
    >>> outcome(CaseResult("c", False, "omission", "n1", None, [], "boom"))
    'missed'
    """
    if locations and localised(r):
        return "localised"
    return "detected" if detected(r) else "missed"


def score(results: Sequence[CaseResult], *, locations: bool = True) -> dict[str, Any]:
    """The figures of ALGORITHMS.md §6.

    Parameters
    ----------
    results : sequence of CaseResult
    locations : bool
        False for evaluators that give a family only (LLM judges): localisation is
        then null.

    Returns
    -------
    dict
        Detection accuracy, balanced detection accuracy, clean specificity,
        localisation, per-family rows and the errored cases.
    """
    total = len(results)
    correct = sum(1 for r in results if r.verdict is not None and (r.verdict == "clean") == r.clean)
    clean = [r for r in results if r.clean]
    spec_ok = sum(1 for r in clean if r.verdict == "clean")
    per_family: dict[str, dict[str, Any]] = {}
    perturbed = [r for r in results if not r.clean and r.family]
    loc_hits = exact_hits = 0
    raw_rates: list[tuple[int, int]] = []
    for fam in sorted({r.family for r in perturbed if r.family}, key=_family_order):
        rows = [r for r in perturbed if r.family == fam]
        det = sum(1 for r in rows if detected(r))
        loc = sum(1 for r in rows if localised(r))
        exact = sum(1 for r in rows if exactly_localised(r))
        raw_rates.append((det, len(rows)))
        loc_hits += loc
        exact_hits += exact
        per_family[fam] = {
            "cases": len(rows),
            "detection": _share(det, len(rows)),
            "localization": _share(loc, len(rows)) if locations else None,
            "exact_localization": _share(exact, len(rows)) if locations else None,
        }
    specificity = _share(spec_ok, len(clean))
    # from the unrounded rates: rounding twice can move the 6th decimal
    rates = [det / n for det, n in raw_rates if n]
    balanced = (
        None
        if not clean or not rates
        else round((sum(rates) / len(rates) + spec_ok / len(clean)) / 2, 6)
    )
    return {
        "cases": total,
        "detection_accuracy": _share(correct, total),
        "balanced_detection_accuracy": balanced,
        "clean_specificity": specificity,
        "localization": _share(loc_hits, len(perturbed)) if locations else None,
        "exact_localization": _share(exact_hits, len(perturbed)) if locations else None,
        "per_family": per_family,
        "clean": {"cases": len(clean), "specificity": specificity},
        "errors": [{"id": r.id, "error": r.error} for r in results if r.verdict is None],
    }


def _family_order(f: str) -> int:
    return FAMILIES.index(f) if f in FAMILIES else len(FAMILIES)


def format_table(scores: dict[str, Any]) -> str:
    """The per-family table of :func:`score`'s figures, as plain text.

    Parameters
    ----------
    scores : dict

    Returns
    -------
    str
    """

    def cell(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    head = f"{'family':<22}{'cases':>7}{'detection':>11}{'localization':>14}{'exact loc.':>12}"
    lines = [head, "-" * len(head)]
    for fam, row in scores["per_family"].items():
        lines.append(
            f"{fam:<22}{row['cases']:>7}{cell(row['detection']):>11}"
            f"{cell(row['localization']):>14}{cell(row['exact_localization']):>12}"
        )
    clean = scores["clean"]
    lines.append(
        f"{'clean (specificity)':<22}{clean['cases']:>7}{cell(clean['specificity']):>11}{'—':>14}{'—':>12}"
    )
    lines.append("-" * len(head))
    lines.append(
        f"{'overall':<22}{scores['cases']:>7}{cell(scores['detection_accuracy']):>11}"
        f"{cell(scores['localization']):>14}{cell(scores['exact_localization']):>12}"
    )
    lines.append(f"balanced detection accuracy: {cell(scores['balanced_detection_accuracy'])}")
    if scores["errors"]:
        lines.append(f"errored cases (counted wrong): {len(scores['errors'])}")
        lines.extend(f"  {e['id']}: {e['error']}" for e in scores["errors"][:20])
    return "\n".join(lines)
