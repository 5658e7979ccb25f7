"""What the ``contracteval`` commands share: the usage error, JSON output, reading
``--query`` and the mode/extractor rule (CLI.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .conditioning import resolve_query
from .formats import Contract, Query, dumps, read_query


class UsageError(Exception):
    """A command line CLI.md refuses (exit status 2)."""


def print_json(doc: Any) -> None:
    sys.stdout.write(dumps(doc))


def query_arg(contract: Contract, value: str) -> Query:
    """``--query``: a query document when a file of that name exists, else an id
    embedded in the contract."""
    path = Path(value)
    if path.is_file():
        return read_query(path)
    return resolve_query(contract, value)


def check_modes(args: argparse.Namespace) -> None:
    """``--mode oracle`` pairs by gold ids, so it takes no extractor.

    >>> check_modes(argparse.Namespace(mode="oracle", extractor="heuristic"))
    Traceback (most recent call last):
    ...
    matching.cli_common.UsageError: --mode oracle pairs by gold ids and needs the gold observed nodes: use --extractor none
    """
    if getattr(args, "mode", None) == "oracle" and getattr(args, "extractor", "none") != "none":
        raise UsageError(
            "--mode oracle pairs by gold ids and needs the gold observed nodes:"
            " use --extractor none"
        )


def llm_config() -> Any:
    from .llm.config import LLMConfig

    return LLMConfig.from_env()  # LLMConfigError (a usage error) names a bad variable
