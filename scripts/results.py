"""Regenerate docs/results.md: the controlled suite under three regimes.

    .venv/bin/python scripts/results.py          (or: make results)

Runs `fixtures/suite` in (1) oracle mode, (2) token mode on the gold observed graphs,
(3) token mode on graphs from the offline heuristic extractor, (4) semantic mode on
extracted graphs under the zero-shot and taught enactment protocols, with one ablation
per matching rule, and writes the tables with the LLM-judge figures the ContractEval
paper reports for its own suite.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.behaviour import extract_behaviour  # noqa: E402
from matching.embed import encoder  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.extract import extract_heuristic  # noqa: E402
from matching.llm.components import declared_study, format_components, observed_study  # noqa: E402
from matching.propose import propose_heuristic  # noqa: E402
from matching.semantic_match import ABLATIONS, RULES, rules_in_effect  # noqa: E402
from matching.suite import load_suite, run_suite, score  # noqa: E402

REGIMES = (
    ("oracle", "Oracle: audited G_E, gold observed graph, oracle matching", "oracle", "none"),
    ("gold-token", "Gold graph, token matching (gold ids ignored)", "token", "none"),
    ("heuristic-token", "Heuristic extraction from the text, token matching", "token", "heuristic"),
)
# (key, title, extractor, protocol): semantic mode, contracts' authored enactments removed
SEMANTIC = (
    (
        "semantic-heuristic-zero",
        "Semantic matching, heuristic extraction, zero-shot",
        "heuristic",
        "zero-shot",
    ),
    (
        "semantic-behaviour-zero",
        "Semantic matching, behaviour extraction, zero-shot",
        "behaviour",
        "zero-shot",
    ),
    (
        "semantic-heuristic-taught",
        "Semantic matching, heuristic extraction, taught",
        "heuristic",
        "taught",
    ),
    (
        "semantic-behaviour-taught",
        "Semantic matching, behaviour extraction, taught",
        "behaviour",
        "taught",
    ),
)
ABLATED = ("behaviour", "taught")  # the configuration each rule is switched off in


def cell(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def table(s: dict) -> str:
    rows = [
        "| family | cases | detection | localisation | exact localisation |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for fam, r in s["per_family"].items():
        rows.append(
            f"| {fam} | {r['cases']} | {cell(r['detection'])} | {cell(r['localization'])}"
            f" | {cell(r['exact_localization'])} |"
        )
    rows.append(
        f"| clean (specificity) | {s['clean']['cases']} | {cell(s['clean_specificity'])} | — | — |"
    )
    rows.append(
        f"| **overall** | {s['cases']} | {cell(s['detection_accuracy'])} | {cell(s['localization'])}"
        f" | {cell(s['exact_localization'])} |"
    )
    rows.append("")
    rows.append(
        f"Detection accuracy {cell(s['detection_accuracy'])}, balanced detection accuracy"
        f" {cell(s['balanced_detection_accuracy'])}, clean specificity {cell(s['clean_specificity'])}."
    )
    return "\n".join(rows)


def _timed(suite, mode: str, extractor: str, expected=None) -> dict:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    results = run_suite(suite, mode=mode, extractor=extractor, expected=expected)
    s = score(results)
    s["seconds"] = round(time.perf_counter() - t, 2)
    s["ms_per_case"] = round(1000 * s["seconds"] / max(len(results), 1), 1)
    return s


def semantic_runs(suite, out: dict) -> None:  # type: ignore[no-untyped-def]
    """The semantic rows, then each rule of the ablated configuration switched off."""
    expected = {
        p: protocol_expected(suite.contracts, suite.cases, p) for p in ("zero-shot", "taught")
    }
    for key, _, extractor, protocol in SEMANTIC:
        out[key] = _timed(suite, "semantic", extractor, expected[protocol])
        print(
            f"{key}: balanced {out[key]['balanced_detection_accuracy']} ({out[key]['seconds']} s)",
            file=sys.stderr,
        )
    # warm: the same configuration again, every text already embedded
    extractor, protocol = ABLATED
    out["semantic-warm"] = _timed(suite, "semantic", extractor, expected[protocol])
    out["ablations"] = {}
    for rule in ABLATIONS:
        with rules_in_effect(RULES.toggled(rule)):
            out["ablations"][rule] = _timed(suite, "semantic", extractor, expected[protocol])
        print(
            f"without {rule}: balanced {out['ablations'][rule]['balanced_detection_accuracy']}",
            file=sys.stderr,
        )


def _brief(s: dict) -> str:
    ea = s["per_family"].get("extra_action", {})
    return (
        f"{cell(s['clean_specificity'])} | {cell(s['balanced_detection_accuracy'])}"
        f" | {cell(ea.get('detection'))} | {cell(s['localization'])}"
    )


def semantic_sections(out: dict) -> list[str]:
    parts = [
        "## Semantic matching on extracted graphs (`--mode semantic`)",
        "",
        "The contracts' authored `meta.enactment` are removed first (they were written with"
        " the traces). *Zero-shot*: no enactments at all. *Taught*: for each query q, the"
        " enactments are the evidence quotes of the gold pairings in the clean cases of the"
        " *other* queries of the same contract. Targets (issue): zero-shot clean specificity"
        " ≥ 0.60 and balanced detection ≥ 0.75; taught ≥ 0.90 and ≥ 0.90 with extra-action"
        " detection ≥ 0.80.",
        "",
    ]
    for key, title, extractor, protocol in SEMANTIC:
        s = out[key]
        parts += [
            f"### {title}",
            "",
            f"`--mode semantic --extractor {extractor}`, {protocol} ({s['seconds']} s,"
            f" {s['ms_per_case']} ms per case)",
            "",
            table(s),
            "",
        ]
    warm = out["semantic-warm"]
    parts += [
        f"Cost per case with every text already embedded (behaviour, taught, run again):"
        f" {warm['ms_per_case']} ms.",
        "",
        f"### Ablations: each rule switched alone (`{ABLATED[0]}` extraction, {ABLATED[1]})",
        "",
        "Each row switches one rule of `matching.semantic_match.Rules`: off where the default"
        " has it on, on where the default leaves it off (`tools_extra`).",
        "",
        "| rule switched | clean specificity | balanced detection | extra-action detection | localisation |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| (none: the defaults) | {_brief(warm)} |",
    ]
    parts += [
        f"| {rule} {'on' if getattr(RULES.toggled(rule), rule) is True else 'off'} | {_brief(s)} |"
        for rule, s in out["ablations"].items()
    ]
    return [*parts, ""]


def main() -> int:
    # CONTRACTEVAL_EMBED_CACHE=file.npz keeps sentence vectors between runs of this
    # benchmark (the figures are the same; only the first run pays for embedding)
    cache = os.environ.get("CONTRACTEVAL_EMBED_CACHE")
    if cache:
        print(f"embedding cache: {encoder().load(Path(cache))} vectors", file=sys.stderr)
    suite = load_suite(ROOT / "fixtures" / "suite")
    out: dict[str, dict] = {}
    for key, _, mode, extractor in REGIMES:
        t = time.perf_counter()
        results = run_suite(suite, mode=mode, extractor=extractor)
        s = score(results)
        s["seconds"] = round(time.perf_counter() - t, 2)
        out[key] = s
        print(
            f"{key}: detection {s['detection_accuracy']} localisation {s['localization']}"
            f" ({s['seconds']} s)",
            file=sys.stderr,
        )
    semantic_runs(suite, out)
    if cache:
        encoder().save(Path(cache))
    (ROOT / "docs" / "results.json").write_text(json.dumps(out, indent=1) + "\n")
    notes_file = ROOT / "docs" / "results-notes.md"
    notes = notes_file.read_text() if notes_file.exists() else ""
    n_contracts = len(suite.contracts)
    n_clean = sum(1 for c in suite.cases if c.clean)
    parts = [
        "# Results: the controlled validity suite",
        "",
        "<!-- generated by scripts/results.py (make results); edit docs/results-notes.md instead -->",
        "",
        f"Suite: `fixtures/suite` — {n_contracts} audited contracts, {n_clean} clean executions,"
        f" {len(suite.cases) - n_clean} perturbed cases (one per family per clean case where the"
        " generator finds a candidate whose label it can verify). Regenerate with `make suite`"
        " then `make results`.",
        f"Machine: Python {platform.python_version()}, {platform.machine()}.",
        "",
    ]
    for key, title, mode, extractor in REGIMES:
        s = out[key]
        parts += [
            f"## {title}",
            "",
            f"`contracteval suite fixtures/suite --mode {mode} --extractor {extractor}` ({s['seconds']} s)",
            "",
            table(s),
            "",
        ]
        if s["errors"]:
            parts += [f"{len(s['errors'])} case(s) errored and count as wrong.", ""]
    parts += semantic_sections(out)
    declared = declared_study(suite.contracts.values(), propose_heuristic, "heuristic")
    observed = observed_study(suite, extract_heuristic, "heuristic")
    behaviour = observed_study(suite, extract_behaviour, "behaviour")
    parts += [
        "## Component study (offline components; `contracteval components fixtures/suite`)",
        "",
        "Declared graphs proposed from the artifact text vs the audited contracts (nodes paired by"
        " the token matcher, sim ≥ 0.35), and observed nodes extracted from the text vs the gold"
        " observed nodes of the clean cases (evidence overlap). With an LLM endpoint configured"
        " the same command adds `llm:<model>` rows; none could be run here.",
        "",
        "```",
        format_components([declared], [observed, behaviour]),
        "```",
        "",
    ]
    parts += [
        "## LLM judges, as the ContractEval paper reports them (its suite, not re-run here)",
        "",
        "| evaluator | detection | localisation |",
        "| --- | ---: | ---: |",
        "| output-only LLM judges | 0.495 | 0.400 |",
        "| trace-aware LLM judges | 0.570 | 0.468 |",
        "| strongest trace-aware judge | missed 29.0% of perturbed cases | — |",
        "| oracle ContractEval | every perturbation detected | every perturbation localised |",
        "",
        "No LLM could be run in this environment (no network), so the judge baselines of"
        " `contracteval judge` are not measured here; the figures above are the paper's.",
        "",
    ]
    if notes:
        parts += [notes.strip(), ""]
    (ROOT / "docs" / "results.md").write_text("\n".join(parts))
    print("wrote docs/results.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
