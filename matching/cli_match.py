"""``contracteval match``: the conformance report of one observed graph, or of many in
one process.

With one ``--observed`` file the report is printed as CLI.md says. With several (a
batch of traces of one query), each file is read and checked first — an invalid one
stops the command with exit 1 before anything is printed — and then one line per file
is printed, in order, as JSON Lines: ``{"observed": PATH, "report": REPORT}``, with a
progress bar on stderr. One process loads the engine (and, in semantic mode, the
sentence model) once for the whole batch instead of once per trace.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from .cli_common import check_modes, llm_config, print_json, query_arg
from .errors import ContractEvalError
from .formats import read_observed
from .llm.client import usage_line
from .llm.errors import LLMError
from .model import EXTRACTOR_CHOICES, MODES
from .pipeline import Options, expect, judge_trace
from .progress import ProgressBar
from .validate import load_contract


def cmd_match(args: argparse.Namespace) -> int:
    check_modes(args)
    contract = load_contract(Path(args.contract))
    documents = [(path, read_observed(Path(path))) for path in args.observed]
    try:
        expected = expect(contract, query_arg(contract, args.query))
    except ContractEvalError as exc:
        raise exc.with_file(args.contract) from None
    client = _invariant_judge_client() if args.judge_invariants else None
    judge = None
    if client is not None:
        from .llm.judge import judge_invariants

        judge = partial(judge_invariants, client)
    options = Options(mode=args.mode, extractor=args.extractor)
    many = len(documents) > 1
    bar = ProgressBar("traces")
    for done, (path, observed) in enumerate(documents, 1):
        outcome = judge_trace(
            contract, expected.query, observed, options, expected=expected, judge_with=judge
        )
        if many:
            line = {"observed": path, "report": outcome.report}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
            bar(done, len(documents))
        else:
            print_json(outcome.report)
    bar.close()
    if client is not None:
        sys.stderr.write(usage_line(client.usage(), client.model))
    return 0


def _invariant_judge_client() -> Any:
    """The LLM client that scores G_E's invariants that have no machine check."""
    config = llm_config()
    if not config.configured:
        raise LLMError(
            "--judge-invariants needs an LLM endpoint and none is configured (set"
            " CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY); nothing was run"
        )
    from .llm.client import LLMClient

    return LLMClient(config)


def add_match_command(sub: Any) -> None:
    s = sub.add_parser("match", help="conformance report of one or many observed graphs")
    s.add_argument("contract")
    s.add_argument("--query", required=True)
    s.add_argument(
        "--observed",
        required=True,
        nargs="+",
        help="one observed document, or several: one JSON line per file",
    )
    s.add_argument("--mode", choices=MODES, default="token")
    s.add_argument("--extractor", choices=EXTRACTOR_CHOICES, default="none")
    s.add_argument(
        "--judge-invariants",
        action="store_true",
        help="score invariants without a machine check with the LLM judge",
    )
    s.set_defaults(func=cmd_match)
