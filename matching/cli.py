"""The ``contracteval`` command (CLI.md).

Results go to stdout as JSON (``validate`` prints readable lines, ``suite`` a table);
diagnostics go to stderr. Exit status: 0 success, 1 invalid input (the message names the
file, the JSON path and the rule) or ``validate`` found an error, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .cli_check import add_check_command
from .cli_common import UsageError, check_modes, llm_config, print_json, query_arg
from .cli_match import add_match_command
from .conditioning import condition
from .errors import ContractEvalError
from .extractors import EXTRACTORS, FallbackWarning, get_extractor
from .formats import dumps, read_observed, read_query
from .importers import INPUT_KINDS, parse_select, trajectories
from .importers.load import load_trace, read_source
from .llm.client import usage_line
from .llm.errors import LLMConfigError, LLMError
from .llm.judge import JUDGES
from .model import EXTRACTOR_CHOICES, MODES, SOURCE_KINDS
from .perturb import FAMILIES
from .perturb.variants import KINDS, write_variants
from .progress import ProgressBar
from .suite import format_table, load_suite, perturb_suite, run_suite, score, write_suite
from .validate import audit_file, load_contract

# --------------------------------------------------------------------------- commands


def cmd_validate(args: argparse.Namespace) -> int:
    """contracteval validate: the audit of a contract (exit 1 with errors)."""
    audit = audit_file(Path(args.contract))
    if args.json:
        print_json(audit.to_dict())
        return 0 if audit.ok else 1
    out = sys.stdout
    out.write(f"{args.contract}: {len(audit.errors)} error(s), {len(audit.warnings)} warning(s)\n")
    for kind, items in (("error", audit.errors), ("warning", audit.warnings)):
        for f in items:
            who = f" [{f.node}]" if f.node else ""
            out.write(f"{kind}: {f.path}: {f.message} ({f.rule}){who}\n")
    out.write(
        f"evidence coverage: {audit.coverage:.1%}"
        f" ({audit.covered_lines} of {audit.lines} non-blank lines)\n"
    )
    return 0 if audit.ok else 1


def cmd_condition(args: argparse.Namespace) -> int:
    """contracteval condition: the expected graph of a query, as JSON."""
    contract = load_contract(Path(args.contract))
    try:
        expected = condition(contract, query_arg(contract, args.query))
    except ContractEvalError as exc:
        raise exc.with_file(args.contract) from None
    print_json(expected.to_dict())
    return 0


def cmd_extract(args: argparse.Namespace) -> int:
    """contracteval extract: an observed graph built from a text or a trace export."""
    # JSON sources (chat transcripts, spans, τ-bench results …) are rendered first.
    src = load_trace(Path(args.source), "auto", parse_select(args.select), text_kind=args.kind)
    extractor = get_extractor(args.extractor)
    obs = extractor(src.text, kind=src.source_kind)
    obs.output = src.output
    _note_quotes(extractor)
    if args.contract:
        contract = load_contract(Path(args.contract))
        obs.contract = contract.id
        if args.query:
            obs.query = query_arg(contract, args.query).id
    elif args.query:
        obs.query = read_query(Path(args.query)).id if Path(args.query).is_file() else args.query
    print_json(obs.to_dict())
    return 0


def _note_quotes(extractor: Any) -> None:
    """Say on stderr how many of an LLM extractor's quotes were discarded, and why."""
    report = getattr(extractor, "report", None)
    if report is not None and report.discarded:
        sys.stderr.write(f"contracteval: note: LLM extractor {report.summary()}\n")


def cmd_import(args: argparse.Namespace) -> int:
    """Any supported trace format → an observed document (or the rendered trace)."""
    if args.list:
        _, data = read_source(Path(args.file))
        print_json(trajectories(data))
        return 0
    if not args.out:
        raise UsageError("--out is required (or --list to see a results file's trajectories)")
    src = load_trace(Path(args.file), args.format, parse_select(args.select))
    if args.write == "trace":
        Path(args.out).write_text(src.text, encoding="utf-8")
    else:
        doc: dict[str, Any] = {
            "format": "contracteval.observed/v1",
            "source": {"kind": src.source_kind, "text": src.text},
            "nodes": [],
        }
        if src.output:
            doc["output"] = src.output
        read_observed(doc)  # what we write must read back
        Path(args.out).write_text(dumps(doc), encoding="utf-8")
    sys.stderr.write(f"contracteval: imported {src.kind} from {args.file} into {args.out}\n")
    return 0


def cmd_perturb(args: argparse.Namespace) -> int:
    """contracteval perturb: a suite folder with the perturbed cases added."""
    families = _families(args.families)
    suite = load_suite(Path(args.suite))
    bar = ProgressBar("perturb")
    cases, counts = perturb_suite(suite, families=families, seed=args.seed, progress=bar)
    bar.close()
    write_suite(Path(args.out), suite.contracts.values(), cases)
    clean = sum(1 for c in cases if c.clean)
    print_json(
        {
            "out": str(args.out),
            "seed": args.seed,
            "clean": clean,
            "cases": len(cases),
            "families": counts,
            "unreadable_cases": suite.errors,
        }
    )
    return 0


def _families(value: str) -> list[str]:
    if value == "all":
        return list(FAMILIES)
    names = [f.strip() for f in value.split(",") if f.strip()]
    bad = [f for f in names if f not in FAMILIES]
    if bad or not names:
        raise UsageError(
            f"unknown families {', '.join(bad) or '(none)'}: choose 'all' or from {', '.join(FAMILIES)}"
        )
    return names


def cmd_variants(args: argparse.Namespace) -> int:
    """contracteval variants: a suite folder per robustness variant (docs/engine.md)."""
    kinds = list(KINDS) if args.kind == "all" else [args.kind]
    bar = ProgressBar("variants")
    summary = write_variants(Path(args.suite), kinds, Path(args.out), seed=args.seed, progress=bar)
    bar.close()
    print_json(summary)
    return 0


def cmd_suite(args: argparse.Namespace) -> int:
    """contracteval suite: run and score every case; the family table and JSON."""
    check_modes(args)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    config = llm_config() if args.extractor == "llm" else None  # bad settings: stop first
    suite = load_suite(Path(args.suite))
    started = time.perf_counter()
    bar = ProgressBar(f"suite ({args.mode})")
    results = run_suite(
        suite, mode=args.mode, extractor=args.extractor, jobs=args.jobs, progress=bar
    )
    bar.close()
    seconds = round(time.perf_counter() - started, 3)
    scores = score(results)
    doc = {"cases": scores.pop("cases"), "mode": args.mode, "extractor": args.extractor}
    doc.update(scores)
    doc["seconds"] = seconds
    sys.stdout.write(format_table(doc) + "\n")
    sys.stdout.write(f"{doc['cases']} cases in {seconds:.2f} s\n")
    if config is not None and config.configured and args.jobs == 1:
        from .llm.client import LLMClient

        doc["llm"] = LLMClient.shared(config).usage()  # the extractor's calls in this run
        sys.stdout.write(usage_line(doc["llm"], config.model))
    if args.json:
        Path(args.json).write_text(dumps(doc), encoding="utf-8")
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """An LLM judge baseline over a suite (ALGORITHMS.md §7); there is no offline judge."""
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    config = llm_config()
    if not config.configured:
        sys.stderr.write(
            "contracteval: error: the LLM judges need an LLM endpoint and none is configured"
            " (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY, and CONTRACTEVAL_LLM_BASE_URL"
            " for a server other than OpenAI); there is no offline judge, nothing was run\n"
        )
        return 1
    from .llm.client import LLMClient
    from .llm.judge import judge_suite

    suite = load_suite(Path(args.suite))
    client = LLMClient(config)
    started = time.perf_counter()
    bar = ProgressBar(f"judge ({args.judge})")
    results, verdicts = judge_suite(suite, args.judge, client, limit=args.limit, progress=bar)
    bar.close()
    seconds = round(time.perf_counter() - started, 3)
    scores = score(results, locations=False)
    doc: dict[str, Any] = {
        "cases": scores.pop("cases"),
        "mode": "judge",
        "extractor": "none",
        "judge": args.judge,
        "model": config.model,
    }
    doc.update(scores)
    doc["seconds"] = seconds
    doc["llm"] = client.usage()
    doc["verdicts"] = verdicts
    doc["calls"] = [c.to_dict() for c in client.calls]
    sys.stdout.write(format_table(doc) + "\n")
    sys.stdout.write(f"{doc['cases']} cases in {seconds:.2f} s\n")
    sys.stdout.write(usage_line(doc["llm"], config.model))
    if args.json:
        Path(args.json).write_text(dumps(doc), encoding="utf-8")
    return 0


def cmd_components(args: argparse.Namespace) -> int:
    """Compiled declared graphs vs the audited ones, extracted vs gold observed nodes."""
    from .extract import extract_heuristic
    from .llm.components import declared_study, format_components, observed_study
    from .propose import propose_heuristic

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    config = llm_config()
    suite = load_suite(Path(args.suite))
    contracts = list(suite.contracts.values())
    declared = [declared_study(contracts, propose_heuristic, "heuristic")]
    observed = [observed_study(suite, extract_heuristic, "heuristic", limit=args.limit)]
    doc: dict[str, Any] = {"suite": str(args.suite), "llm": None}
    if config.configured:
        from .llm.client import LLMClient
        from .llm.extractor import LLMExtractor
        from .llm.proposer import propose_llm

        client = LLMClient(config)
        name = f"llm:{config.model}"
        declared.append(declared_study(contracts, lambda t: propose_llm(t, client=client), name))
        observed.append(observed_study(suite, LLMExtractor(client=client), name, limit=args.limit))
        doc["llm"] = client.usage()
    else:
        warnings.warn(
            "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY):"
            " only the offline heuristic proposer and extractor were run; no LLM row is reported",
            FallbackWarning,
            stacklevel=1,
        )
    doc["declared"] = [r.to_dict() for r in declared]
    doc["observed"] = [r.to_dict() for r in observed]
    sys.stdout.write(format_components(declared, observed) + "\n")
    if doc["llm"] is not None:
        sys.stdout.write(usage_line(doc["llm"], config.model))
    if args.json:
        Path(args.json).write_text(dumps(doc), encoding="utf-8")
    return 0


# --------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: usage error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="contracteval", description="Prove that an AI agent followed a procedure.")
    p.add_argument("--version", action="version", version=f"contracteval {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_graph_commands(sub)
    _add_suite_commands(sub)
    add_check_command(sub)
    # Listed for --help only: main() hands "bench ..." to matching.bench untouched.
    sub.add_parser(
        "bench", help="print engine benchmark figures (--quick, --json OUT, --doc OUT.md)"
    )
    return p


def _add_graph_commands(sub: Any) -> None:
    """validate, condition, extract, match: one contract, one execution."""
    s = sub.add_parser("validate", help="audit checks of a contract")
    s.add_argument("contract")
    s.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("condition", help="print the expected graph of a query")
    s.add_argument("contract")
    s.add_argument("--query", required=True, help="a query document or an embedded query id")
    s.set_defaults(func=cmd_condition)

    s = sub.add_parser("extract", help="build an observed graph from a text")
    s.add_argument("--source", required=True)
    s.add_argument("--kind", choices=SOURCE_KINDS, default="trace")
    s.add_argument("--extractor", choices=EXTRACTORS, default="heuristic")
    s.add_argument("--contract")
    s.add_argument("--query")
    s.add_argument("--select", metavar="task_id=…,trial=…", help="a τ-bench results entry")
    s.set_defaults(func=cmd_extract)

    _import_parser(sub)

    add_match_command(sub)


def _add_suite_commands(sub: Any) -> None:
    """perturb, variants, suite, judge, components: whole suites."""
    s = sub.add_parser("perturb", help="make the perturbed cases of a suite")
    s.add_argument("suite")
    s.add_argument("--out", required=True)
    s.add_argument("--families", default="all")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_perturb)

    s = sub.add_parser("variants", help="rewrite a suite's traces as other agents write")
    s.add_argument("suite")
    s.add_argument("--kind", choices=(*KINDS, "all"), default="all")
    s.add_argument("--out", required=True, help="a folder; one suite is written per kind")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_variants)

    s = sub.add_parser("suite", help="run and score every case of a suite")
    s.add_argument("suite")
    s.add_argument("--mode", choices=MODES, default="token")
    s.add_argument("--extractor", choices=EXTRACTOR_CHOICES, default="none")
    s.add_argument("--json", metavar="OUT.json")
    s.add_argument("--jobs", type=int, default=1)
    s.set_defaults(func=cmd_suite)

    _llm_parsers(sub)


def _llm_parsers(sub: Any) -> None:
    s = sub.add_parser("judge", help="score a suite with an LLM judge baseline (needs an LLM)")
    s.add_argument("suite")
    s.add_argument("--judge", required=True, choices=JUDGES)
    s.add_argument("--json", metavar="OUT.json")
    s.add_argument("--limit", type=int, metavar="N", help="judge the first N cases only")
    s.set_defaults(func=cmd_judge)

    s = sub.add_parser("components", help="compiled and extracted graphs vs the audited ones")
    s.add_argument("suite")
    s.add_argument("--json", metavar="OUT.json")
    s.add_argument("--limit", type=int, metavar="N", help="the first N clean cases only")
    s.set_defaults(func=cmd_components)


def _import_parser(sub: Any) -> None:
    s = sub.add_parser("import", help="read a trace export into an observed document")
    s.add_argument("file")
    s.add_argument("--format", choices=("auto", *INPUT_KINDS[1:]), default="auto")
    s.add_argument("--select", metavar="task_id=…,trial=…", help="a τ-bench results entry")
    s.add_argument("--out", metavar="OBSERVED.json")
    s.add_argument(
        "--write",
        choices=("observed", "trace"),
        default="observed",
        help="an observed document (default) or the rendered trace text",
    )
    s.add_argument("--list", action="store_true", help="list a results file's trajectories")
    s.set_defaults(func=cmd_import)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (CLI.md)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        # the benchmark has its own options (--quick, --json, --doc): hand them over untouched
        from . import bench  # type: ignore[attr-defined,unused-ignore]

        return int(bench.main(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", FallbackWarning)
        warnings.showwarning = _show_warning
        try:
            return int(args.func(args))
        except (UsageError, LLMConfigError) as exc:
            parser.print_usage(sys.stderr)
            sys.stderr.write(f"contracteval: usage error: {exc}\n")
            return 2
        except ContractEvalError as exc:
            sys.stderr.write(f"contracteval: error: {exc}\n")
            return 1
        except LLMError as exc:
            # Every LLM failure is classified into one line; a traceback helps nobody.
            sys.stderr.write(f"contracteval: error: LLM call failed: {exc.reason}\n")
            return 1
        except BrokenPipeError:
            return 0


def _show_warning(message: Any, category: Any, *_: Any, **__: Any) -> None:
    sys.stderr.write(f"contracteval: warning: {message}\n")


if __name__ == "__main__":
    raise SystemExit(main())
