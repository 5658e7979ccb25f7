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
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import pairfit  # noqa: E402

from matching.alignment import Setup  # noqa: E402
from matching.behaviour import extract_behaviour  # noqa: E402
from matching.devset import VIEWS  # noqa: E402
from matching.embed import encoder  # noqa: E402
from matching.enactments import protocol_expected  # noqa: E402
from matching.extract import extract_heuristic  # noqa: E402
from matching.fitting import decided_scores, reliability, risk_coverage, verdict_scores  # noqa: E402
from matching.llm.components import declared_study, format_components, observed_study  # noqa: E402
from matching.pair_model import Thresholds, load_model  # noqa: E402
from matching.propose import propose_heuristic  # noqa: E402
from matching.suite import Suite, load_suite, run_suite, score  # noqa: E402

REGIMES = (
    ("oracle", "Oracle: audited G_E, gold observed graph, oracle matching", "oracle", "none"),
    ("gold-token", "Gold graph, token matching (gold ids ignored)", "token", "none"),
    ("heuristic-token", "Heuristic extraction from the text, token matching", "token", "heuristic"),
)
PROTOCOLS = ("zero-shot", "taught")
VARIANTS = ("merged", "split", "voice", "json")
IMG = ROOT / "docs" / "img"


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


def semantic_runs(suite, out: dict) -> None:  # type: ignore[no-untyped-def]
    """Semantic mode, every figure held out: on the suite and its variants each contract is
    aligned by a pair model fitted without it; on the development set (a contract the
    model never saw) the verdict thresholds are fitted without the scored task."""
    model = load_model()
    x, y, groups = pairfit.pairs_for(suite).arrays()
    folds = pairfit.fold_models(x, y, groups)
    for protocol in PROTOCOLS:
        out[f"semantic-{protocol}"] = held_out_suite(suite, folds, model, protocol)
    for kind in VARIANTS:
        varied = variant_suite(suite, kind)
        out[f"variant-{kind}"] = held_out_suite(varied, folds, model, "zero-shot")
    out["devset"] = devset_figures(model, (x, y))


def held_out_suite(suite, folds, model, protocol: str) -> dict:  # type: ignore[no-untyped-def]
    expected = protocol_expected(suite.contracts, suite.cases, protocol)
    t = time.perf_counter()
    results = []
    for held, fold_model in folds:
        sub = Suite(contracts=suite.contracts, cases=[c for c in suite.cases if c.contract in held])
        setup = Setup(replace(fold_model, thresholds=model.thresholds), model.knobs)
        results += run_suite(
            sub, mode="semantic", extractor="behaviour", expected=expected, semantic=setup
        )
    s = score(results)
    s["seconds"] = round(time.perf_counter() - t, 2)
    s["ms_per_case"] = round(1000 * s["seconds"] / max(len(results), 1), 1)
    ok = [r for r in results if r.p_violation is not None]
    s["decided"] = decided_scores(
        [r.p_violation for r in ok], [not r.clean for r in ok], model.thresholds
    )
    print(f"{protocol}: balanced {s['balanced_detection_accuracy']}", file=sys.stderr)
    return s


def variant_suite(suite, kind: str):  # type: ignore[no-untyped-def]
    from matching.perturb.variants import make_variant

    return Suite(
        contracts=suite.contracts, cases=[make_variant(c, kind, seed=0) for c in suite.cases]
    )


def devset_figures(model, fixture_xy) -> dict:  # type: ignore[no-untyped-def]
    """Held out by task: each trace is read by a pair model that never saw its task's
    labelled pairs, its P(violation) comes from a verdict model fitted on the other
    tasks, and its verdict from thresholds fitted on the other tasks."""
    x, views, items, certain = pairfit.devset_features(
        fixture_xy, pairfit.dev_pairs(), model.knobs_
    )
    out: dict = {"cases": len(items), "tasks": len({it.task for it in items})}
    for view, ys in views.items():
        model_ps = pairfit.verdict_oof(x, ys, items)
        _, fit = pairfit.fit_verdict(model_ps, ys, items, certain)
        ps = pairfit.as_read(model_ps, certain)
        held = fit["held_out"]
        scored = verdict_scores(held["verdicts"], held["y"])
        ya = held["y"]
        out[view] = {
            "violations": int(sum(ys)),
            "share_decided": scored["share_decided"],
            "balanced_decided": scored["balanced_decided"],
            "clean_specificity_decided": scored["clean_specificity_decided"],
            "balanced_all_at_half": decided_scores(ps, ys, Thresholds(0.5, 0.5))[
                "balanced_decided"
            ],
            "auc": _auc(ps, ys),
            "reliability": reliability(held["p"], ya),
            "risk_coverage": risk_coverage(held["p"], ya),
        }
    return out


def _auc(p, y) -> float | None:  # type: ignore[no-untyped-def]
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, p)), 6) if 0 < sum(y) < len(y) else None


def plots(dev: dict) -> list[str]:
    """A risk–coverage plot and a reliability diagram of the development set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    for view, style in (("procedural", ":"), ("contract", "-"), ("strict", "--")):
        rc = dev[view]["risk_coverage"]
        ax[0].plot([c for c, _ in rc], [b for _, b in rc], style, label=view)
        rel = dev[view]["reliability"]
        ax[1].plot([p for p, _, _ in rel], [o for _, o, _ in rel], style + "o", label=view)
    ax[0].set(
        xlabel="share decided",
        ylabel="balanced accuracy of the decided",
        title="Risk–coverage (held-out tasks)",
        ylim=(0, 1.02),
    )
    ax[1].plot([0, 1], [0, 1], ":", color="grey")
    ax[1].set(
        xlabel="P(violation), bin mean",
        ylabel="share labelled violation",
        title="Reliability (held-out tasks)",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    for a in ax:
        a.legend()
    fig.tight_layout()
    path = IMG / "devset-confidence.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [f"![Risk–coverage and reliability on the development set](img/{path.name})", ""]


def _row(name: str, s: dict) -> str:
    d = s["decided"]
    return (
        f"| {name} | {cell(s['clean_specificity'])} | {cell(s['balanced_detection_accuracy'])}"
        f" | {cell(s['localization'])} | {cell(d['share_decided'])} | {cell(d['balanced_decided'])}"
        f" | {s['ms_per_case']} |"
    )


def semantic_sections(out: dict) -> list[str]:
    t = load_model().thresholds
    parts = [
        "## Semantic matching on extracted graphs (`--mode semantic`)",
        "",
        "One order-aware alignment over the pair model's probabilities (docs/engine.md,"
        ' "Semantic mode"). Every figure is held out: on the suite and its variants each'
        " contract is aligned by a pair model fitted without it (five folds by contract);"
        " the knobs were chosen the same way. The authored `meta.enactment` are removed"
        " (they were written with the traces). *Zero-shot*: no enactments. *Taught*: each"
        " query gets the enactments harvested from the clean cases of the *other* queries"
        " of its contract. *Decided*: verdicts read with the shipped thresholds (clean"
        f" below P(violation) {t.clean_below}, violation from {t.violation_from},"
        " *needs review* between).",
        "",
        "| set | clean specificity | balanced detection | localisation | share decided |"
        " balanced (decided) | ms per case |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for protocol in PROTOCOLS:
        parts.append(_row(f"fixture suite, {protocol}", out[f"semantic-{protocol}"]))
    for kind in VARIANTS:
        parts.append(_row(f"variant `{kind}`, zero-shot", out[f"variant-{kind}"]))
    parts += ["", "### Per family, zero-shot", "", table(out["semantic-zero-shot"]), ""]
    dev = out["devset"]
    parts += [
        "## The development set: real τ-bench traces (`fixtures/taubench`)",
        "",
        f"{dev['cases']} gpt-4o airline trajectories of {dev['tasks']} tasks, hand-labelled"
        " against the policy (fixtures/taubench/README.md). The pair model and the knobs"
        " never saw this contract; the verdict thresholds are fitted with whole tasks held"
        " out (five folds by task). *Procedural*: the steps the contract models (omission,"
        " wrong branch, ordering, extra action); *contract*: those and the global rules"
        " an invariant checks by machine (a reply sent with a tool call), what the"
        " contract judges and the verdict is fitted to; *strict*: every rule, global ones"
        " included (information not from a tool), which semantic matching leaves to"
        " invariants it cannot check.",
        "",
        "| label view | violations | share decided | balanced (decided) |"
        " clean specificity (decided) | balanced, every case at P ≥ 0.5 | AUC of P(violation) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for view in VIEWS:
        d = dev[view]
        parts.append(
            f"| {view} | {d['violations']} / {dev['cases']} | {cell(d['share_decided'])}"
            f" | {cell(d['balanced_decided'])} | {cell(d['clean_specificity_decided'])}"
            f" | {cell(d['balanced_all_at_half'])} | {cell(d['auc'])} |"
        )
    parts += ["", *plots(dev)]
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
    encoder().load(ROOT / "var" / "embeddings.npz") if not cache else None
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
