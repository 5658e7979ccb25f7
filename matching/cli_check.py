"""``contracteval check``: the CI gate over traces (:mod:`matching.gate`).

Exit status: 0 when no trace fails the policy, 1 when one does (or an input is
invalid: the message names the file), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .extractors import EXTRACTORS
from .gate import POLICIES, check_paths, gated, junit_xml, markdown
from .match import MODES
from .progress import ProgressBar
from .validate import load_contract


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
    summary = markdown(checked, args.fail_on)
    if args.summary:
        Path(args.summary).write_text(summary, encoding="utf-8")
    sys.stdout.write(summary)
    return 1 if failing else 0


def add_check_command(sub: Any) -> None:
    s = sub.add_parser("check", help="gate traces on a contract for CI (JUnit XML, Markdown)")
    s.add_argument("contract")
    s.add_argument("traces", nargs="+", help="trace files, folders or τ-bench results files")
    s.add_argument("--query", required=True, help="a query id, or a pattern such as 't{task_id}'")
    s.add_argument("--mode", choices=MODES, default="semantic")
    s.add_argument("--extractor", choices=EXTRACTORS, default="behaviour")
    s.add_argument("--fail-on", choices=POLICIES, default="violation")
    s.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    s.add_argument("--summary", metavar="FILE", help="write the Markdown summary here")
    s.set_defaults(func=cmd_check)
