"""``contracteval check``: the CI gate over traces (:mod:`matching.gate`).

As every command of CLI.md: results go to stdout as JSON (the policy, whether it
passed, and each trace's verdict, P(violation) and failures), diagnostics to stderr,
``--mode`` defaults to ``token``. Exit status: 0 when no trace fails the policy; 1 when
an input is invalid (the message names the file); 2 on a usage error; and, beyond the
codes CLI.md defines, :data:`POLICY_FAILED` (3) when a trace fails the policy, so that
a CI step can tell a failing agent from a broken input.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from .extractors import EXTRACTORS
from .formats import dumps
from .gate import POLICIES, check_paths, gated, junit_xml, markdown
from .model import MODES
from .progress import ProgressBar
from .validate import load_contract

POLICY_FAILED = 3


def cmd_check(args: argparse.Namespace) -> int:
    contract = load_contract(Path(args.contract))
    bar = ProgressBar("traces")
    try:
        checked = check_paths(
            contract,
            args.query,
            [Path(p) for p in args.traces],
            mode=args.mode,
            extractor=args.extractor,
            progress=bar,
        )
    finally:
        bar.close()
    failing = gated(checked, args.fail_on)
    if args.junit:
        Path(args.junit).write_text(junit_xml(checked, args.fail_on), encoding="utf-8")
    if args.summary:
        Path(args.summary).write_text(markdown(checked, args.fail_on), encoding="utf-8")
    doc = {
        "policy": args.fail_on,
        "passed": not failing,
        "traces": [dataclasses.asdict(c) for c in checked],
    }
    sys.stdout.write(dumps(doc))
    verdict = "failed" if failing else "passed"
    sys.stderr.write(
        f"contracteval: check {verdict}: {len(failing)} of {len(checked)} traces fail"
        f" on {args.fail_on}\n"
    )
    return POLICY_FAILED if failing else 0


def add_check_command(sub: Any) -> None:
    s = sub.add_parser("check", help="gate traces on a contract for CI (JUnit XML, Markdown)")
    s.add_argument("contract")
    s.add_argument("traces", nargs="+", help="trace files, folders or τ-bench results files")
    s.add_argument("--query", required=True, help="a query id, or a pattern such as 't{task_id}'")
    s.add_argument("--mode", choices=MODES, default="token")
    s.add_argument("--extractor", choices=EXTRACTORS, default="heuristic")
    s.add_argument("--fail-on", choices=POLICIES, default="violation")
    s.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    s.add_argument("--summary", metavar="FILE", help="write the Markdown summary here")
    s.set_defaults(func=cmd_check)
