"""The CI gate: ``contracteval check`` over traces, and :func:`assert_follows` for tests.

Each trace is read as everything else reads one (imported from any supported format,
extracted, matched against the query's expected graph) and gets a verdict:

- semantic mode: the report's confidence verdict, ``clean``, ``needs_review`` or
  ``violation`` (the shipped thresholds);
- token and oracle modes: ``violation`` when the report has a failure, else ``clean``.

The policy ``fail_on`` says which verdicts fail the gate: ``violation`` (the default)
fails only violations; ``needs-review`` also fails what a reviewer should look at.
Results come as a list of :class:`Checked`, a JUnit XML document (one test case per
trace, a ``<failure>`` per gated trace listing its failures) and a Markdown summary.

>>> from matching.validate import load_contract
>>> from pathlib import Path
>>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
>>> trace = "[user] Refund order 1042.\\n[assistant] Done, I refunded it.\\n"
>>> checked = check_text(c, "q1", trace, name="one", mode="token", extractor="heuristic")
>>> checked.verdict, gated([checked], "violation") == [checked]
('violation', True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from .conditioning import resolve_query
from .errors import ContractEvalError
from .formats import Contract, read_observed
from .importers import detect_kind
from .importers.load import read_source
from .pipeline import Options, expect, judge_trace
from .uploads import prepare_input

POLICIES = ("violation", "needs-review")
FAILING = {"violation": {"violation"}, "needs-review": {"violation", "needs_review"}}


@dataclass(frozen=True)
class Checked:
    """One trace's verdict: ``failures`` are the report's (family, node, message …)."""

    name: str
    query: str
    verdict: str  # clean | needs_review | violation
    p_violation: float | None
    failures: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def check_text(
    contract: Contract,
    query: str,
    data: Any,
    *,
    name: str,
    mode: str = "semantic",
    extractor: str = "behaviour",
) -> Checked:
    """Match one input against ``query``: rendered text or any export the web app takes
    (read by :func:`~matching.uploads.prepare_input`, as an upload is). An observed
    document with nodes is matched as it is; anything else is extracted."""
    t0 = time.perf_counter()
    expected = expect(contract, resolve_query(contract, query), mode=mode)
    prepared = prepare_input(
        kind="auto",
        data=data,
        contract_key=contract.id,
        query_key=expected.query.id,
        mode=mode,
        extractor=extractor,
    )
    # an observed document with nodes is judged as it is; anything else is extracted
    extractor = prepared.extractor if prepared.kind != "observed" else "none"
    observed = read_observed(prepared.observed)
    out = judge_trace(
        contract,
        expected.query,
        observed,
        Options(mode=mode, extractor=extractor),
        expected=expected,
    )
    ev = out.evaluation
    if out.assessment is not None:
        verdict, p = out.assessment["verdict"], float(out.assessment["p_violation"])
    else:
        verdict, p = ("violation" if ev.failures else "clean"), None
    return Checked(name, expected.query.id, verdict, p, list(ev.failures), time.perf_counter() - t0)


def inputs(paths: Sequence[Path]) -> Iterator[tuple[str, dict[str, str], Any]]:
    """``(name, selection, data)`` of every input under ``paths``: a folder gives its
    files (sorted, hidden ones skipped); a τ-bench results file each of its entries
    (its ``task_id`` and ``trial`` the selection). Each file is read once."""
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if path.is_dir() and any(p.startswith(".") for p in f.relative_to(path).parts):
                continue
            raw, data = read_source(f)
            if _is_results(data) and len(data) > 1:
                for e in data:
                    sel = {"task_id": str(e.get("task_id")), "trial": str(e.get("trial"))}
                    yield f"{f}#task_id={sel['task_id']},trial={sel['trial']}", sel, e
            else:
                yield str(f), {}, raw if data is None else data


def _is_results(data: Any) -> bool:
    if not isinstance(data, list) or not data:
        return False
    try:
        return detect_kind(data) == "tau_bench_results"
    except ContractEvalError:
        return False


def check_paths(
    contract: Contract,
    query: str,
    paths: Sequence[Path],
    *,
    mode: str = "semantic",
    extractor: str = "behaviour",
    progress: Callable[[int, int], None] | None = None,
) -> list[Checked]:
    """:func:`check_text` of every input under ``paths``, in one process; ``query`` may
    name fields of a τ-bench selection (``t{task_id}``); ``progress(done, total)``."""
    items = list(inputs(paths))
    out = []
    for k, (name, select, data) in enumerate(items):
        q = query.format(**select) if select else query.format(task_id="", trial="")
        try:
            out.append(check_text(contract, q, data, name=name, mode=mode, extractor=extractor))
        except ContractEvalError as exc:
            raise exc.with_file(name) from None
        if progress is not None:
            progress(k + 1, len(items))
    return out


def gated(checked: Iterable[Checked], fail_on: str) -> list[Checked]:
    """The traces that fail the gate under the policy ``fail_on``."""
    if fail_on not in FAILING:
        raise ValueError(f"unknown policy {fail_on!r}: choose one of {', '.join(POLICIES)}")
    return [c for c in checked if c.verdict in FAILING[fail_on]]


def describe(failure: dict[str, Any]) -> str:
    """One line for a failure: its family, where, and its message."""
    prob = failure.get("probability")
    p = f" (P {prob:.2f})" if isinstance(prob, int | float) else ""
    where = failure.get("location") or "—"
    return f"{failure.get('family', '?')} at {where}{p}: {failure.get('detail', '')}"


def junit_xml(checked: Sequence[Checked], fail_on: str) -> str:
    """A JUnit XML document: one ``<testcase>`` per trace, a ``<failure>`` per gated one."""
    failing = {c.name for c in gated(checked, fail_on)}
    suite = ET.Element(
        "testsuite",
        name="contracteval",
        tests=str(len(checked)),
        failures=str(len(failing)),
        errors="0",
        skipped="0",
        time=f"{sum(c.seconds for c in checked):.3f}",
    )
    for c in checked:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"contracteval.{c.query}",
            name=c.name,
            time=f"{c.seconds:.3f}",
        )
        lines = [describe(f) for f in c.failures]
        if c.name in failing:
            failure = ET.SubElement(case, "failure", type=c.verdict, message=_headline(c))
            failure.text = "\n".join(lines)
        elif lines:
            ET.SubElement(case, "system-out").text = _headline(c) + "\n" + "\n".join(lines)
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _headline(c: Checked) -> str:
    p = "" if c.p_violation is None else f", P(violation) {c.p_violation:.2f}"
    return f"{c.verdict}{p}: {len(c.failures)} failure(s)"


def markdown(checked: Sequence[Checked], fail_on: str) -> str:
    """A Markdown summary for a CI log: the count, then a row per trace."""
    failing = gated(checked, fail_on)
    status = "failed" if failing else "passed"
    lines = [
        f"## ContractEval: {status} ({len(failing)} of {len(checked)} traces fail on {fail_on})",
        "",
        "| trace | query | verdict | P(violation) | failures | first failure |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for c in checked:
        p = "—" if c.p_violation is None else f"{c.p_violation:.2f}"
        first = _cell(describe(c.failures[0])) if c.failures else "—"
        lines.append(
            f"| {_cell(c.name)} | {c.query} | {c.verdict} | {p} | {len(c.failures)} | {first} |"
        )
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def assert_follows(
    contract: Contract | str | Path,
    trace: str | Path | list[Any] | dict[str, Any],
    *,
    query: str,
    mode: str = "semantic",
    extractor: str = "behaviour",
    fail_on: str = "violation",
) -> Checked:
    """For an agent's test suite: raise ``AssertionError`` listing the failures when
    ``trace`` (a file, rendered text, or a parsed export such as OpenAI chat messages)
    fails the gate; else return its :class:`Checked`."""
    from .validate import load_contract

    if not isinstance(contract, Contract):
        contract = load_contract(Path(contract))
    if isinstance(trace, Path) or (isinstance(trace, str) and _is_file(trace)):
        raw, data = read_source(Path(trace))
        trace = raw if data is None else data
    checked = check_text(contract, query, trace, name="trace", mode=mode, extractor=extractor)
    if gated([checked], fail_on):
        detail = "\n".join(f"  - {describe(f)}" for f in checked.failures)
        raise AssertionError(
            f"the trace does not follow {contract.id} {query}: {_headline(checked)}\n{detail}"
        )
    return checked


def _is_file(text: str) -> bool:
    return "\n" not in text and len(text) < 4096 and Path(text).is_file()
