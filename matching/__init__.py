"""ContractEval's engine: declared contracts, expected graphs, observed graphs, matching.

Pure Python (networkx, scipy, jsonschema); no Django. The formats, algorithms and
command line it implements are in the project's spec (FORMAT.md, ALGORITHMS.md, CLI.md).

>>> from pathlib import Path
>>> from matching import load_contract, read_observed
>>> from matching.evaluate import evaluate
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> evaluate(c, "q1", read_observed(data / "refund-mini-observed-q1.json"))["verdict"]
'clean'

The names below are loaded on first use (PEP 562), not when the package is imported:
importing one light submodule (``matching.errors``, ``matching.input_limits``) must not
pull networkx, numpy and jsonschema into a process that never evaluates anything, such
as the web app starting up.
"""

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .conditioning import Expected, condition
    from .errors import ContractEvalError
    from .evaluate import Evaluation, evaluate_detailed
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

# public name -> the submodule that defines it
_LAZY = {
    "Audit": "validate",
    "Case": "formats",
    "Contract": "formats",
    "ContractEvalError": "errors",
    "Evaluation": "evaluate",
    "Expected": "conditioning",
    "Observed": "formats",
    "Query": "formats",
    "audit_contract": "validate",
    "condition": "conditioning",
    "evaluate_detailed": "evaluate",
    "load_contract": "validate",
    "read_case": "formats",
    "read_contract": "formats",
    "read_document": "formats",
    "read_observed": "formats",
    "read_query": "formats",
}
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
    "evaluate_detailed",
    "load_contract",
    "read_case",
    "read_contract",
    "read_document",
    "read_observed",
    "read_query",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
