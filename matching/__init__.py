"""ContractEval's engine: declared contracts, expected graphs, observed graphs, matching.

Pure Python (networkx, scipy, jsonschema); no Django. The formats, algorithms and
command line it implements are in the project's spec (FORMAT.md, ALGORITHMS.md, CLI.md).

>>> from pathlib import Path
>>> from matching import load_contract, read_observed, evaluate
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> evaluate(c, "q1", read_observed(data / "refund-mini-observed-q1.json"))["verdict"]
'clean'
"""

from .conditioning import Expected, condition
from .errors import ContractEvalError
from .evaluate import Evaluation, evaluate, evaluate_detailed
from .formats import (
    Case,
    Contract,
    Observed,
    Query,
    read_case,
    read_contract,
    read_document,
    read_observed,
    read_query,
)
from .validate import Audit, audit_contract, load_contract

__version__ = "0.1.0"
__all__ = [
    "Audit",
    "Case",
    "Contract",
    "ContractEvalError",
    "Evaluation",
    "Expected",
    "Observed",
    "Query",
    "audit_contract",
    "condition",
    "evaluate",
    "evaluate_detailed",
    "load_contract",
    "read_case",
    "read_contract",
    "read_document",
    "read_observed",
    "read_query",
]
