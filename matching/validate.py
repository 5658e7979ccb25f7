"""The audit checks of a contract (FORMAT.md §1): errors, warnings, evidence coverage.

Errors make a contract unusable: every command that reads a contract audits it first
(:func:`load_contract`). Warnings are things an annotator should look at. Coverage is
a figure: the share of the artifact's non-blank lines touched by an evidence span.

>>> from matching.formats import read_contract
>>> doc = {"format": "contracteval.contract/v1", "id": "mini",
...        "artifact": {"text": "Greet the customer.\\n\\nThank them."},
...        "nodes": [{"id": "greet", "type": "intent", "label": "Greet",
...                   "required": True, "evidence": [{"start": 0, "end": 19}]},
...                  {"id": "thank", "type": "action", "label": "Thank", "parent": "ghost",
...                   "required": True, "evidence": [{"start": 21, "end": 99}]}]}
>>> audit = audit_contract(doc)
>>> [(f.rule, f.node) for f in audit.errors]
[('span-out-of-range', 'thank'), ('unknown-parent', 'thank')]
>>> audit.coverage  # the overlong span still touches its line
1.0
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import ContractEvalError
from .formats import (
    Contract,
    Source,
    contract_from_data,
    load_json,
    read_contract,
    schema_errors,
)
from .rules import Finding, findings


@dataclass
class Audit:
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    coverage: float = 0.0
    lines: int = 0
    covered_lines: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [asdict(f) for f in self.errors],
            "warnings": [asdict(f) for f in self.warnings],
            "coverage": self.coverage,
            "lines": self.lines,
            "covered_lines": self.covered_lines,
        }


_NODE_PATH = re.compile(r"^\$\.(nodes|invariants|queries)\[(\d+)\]")


def audit_contract(doc: Mapping[str, Any] | Contract) -> Audit:
    """Run every audit check of a contract.

    Parameters
    ----------
    doc : mapping or Contract
        A contract document (schema problems become errors) or a parsed contract.

    Returns
    -------
    Audit
        Errors, warnings (including regexes with nested quantifiers) and coverage;
        never raises for a mapping.
    """
    if isinstance(doc, Contract):
        return _audit(doc)
    audit = Audit()
    problems = schema_errors(doc, "contract")
    if problems:
        for path, rule, message in problems:
            audit.errors.append(Finding(rule, message, path, _owner(doc, path)))
        return audit
    ids_ok = True
    for coll in ("nodes", "invariants", "queries"):
        seen: set[str] = set()
        for i, item in enumerate(doc.get(coll, [])):
            if item["id"] in seen:
                ids_ok = False
                audit.errors.append(
                    Finding(
                        "unique-id",
                        f"duplicate id {item['id']!r}",
                        f"$.{coll}[{i}].id",
                        item["id"],
                    )
                )
            seen.add(item["id"])
    if not ids_ok:
        return audit
    return _audit(contract_from_data(doc))


def _owner(doc: Mapping[str, Any], path: str) -> str | None:
    m = _NODE_PATH.match(path)
    if not m:
        return None
    try:
        item = doc[m.group(1)][int(m.group(2))]
        return item.get("id") if isinstance(item, dict) else None
    except (KeyError, IndexError, TypeError):
        return None


def _audit(c: Contract) -> Audit:
    """Every rule of a parsed contract (:func:`matching.rules.findings`), then coverage."""
    errors, warnings = findings(c)
    lines, covered = coverage_lines(c)
    return Audit(
        errors=errors,
        warnings=warnings,
        coverage=round(covered / lines, 6) if lines else 0.0,
        lines=lines,
        covered_lines=covered,
    )


def coverage_lines(c: Contract) -> tuple[int, int]:
    """Evidence coverage of the artifact's lines.

    Parameters
    ----------
    c : Contract

    Returns
    -------
    (int, int)
        The non-blank lines, and those a node's or invariant's span touches.
    """
    touched = bytearray(len(c.text))
    spans = [sp for n in c.nodes for sp in n.evidence]
    spans += [sp for i in c.invariants for sp in i.evidence]
    for sp in spans:
        start, end = max(sp.start, 0), min(sp.end, len(c.text))
        if start < end:
            touched[start:end] = b"\x01" * (end - start)
    lines = covered = 0
    pos = 0
    for line in c.text.split("\n"):
        if line.strip():
            lines += 1
            covered += 1 in touched[pos : pos + len(line)]
        pos += len(line) + 1
    return lines, covered


def load_contract(src: Source, *, file: str | None = None) -> Contract:
    """Read *and* audit a contract; raise the first audit error.

    Parameters
    ----------
    src : mapping, str, bytes or pathlib.Path
        The contract document.
    file : str, optional
        The file name errors name.

    Returns
    -------
    Contract

    Raises
    ------
    ContractEvalError
        The first schema or audit error (and how many more there are).

    Examples
    --------
    >>> from pathlib import Path
    >>> load_contract(Path("/nonexistent.json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    matching.errors.ContractEvalError: /nonexistent.json: $: cannot read file: ... [io]
    """
    if isinstance(src, Path):
        file = file or str(src)
    c = read_contract(src, file=file)
    audit = _audit(c)
    if audit.errors:
        f = audit.errors[0]
        more = f" (and {len(audit.errors) - 1} more error(s))" if len(audit.errors) > 1 else ""
        raise ContractEvalError(f.message + more, file=file, path=f.path, rule=f.rule)
    return c


def audit_file(path: Path) -> Audit:
    """Audit a contract file.

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    Audit

    Raises
    ------
    ContractEvalError
        Only when the file is not readable JSON, or not a contract document.
    """
    data, _ = load_json(path)
    if not isinstance(data, dict):
        raise ContractEvalError("a contract must be a JSON object", file=str(path), rule="type")
    if data.get("format") != "contracteval.contract/v1":
        raise ContractEvalError(
            f"wrong format {data.get('format')!r}: expected 'contracteval.contract/v1'",
            file=str(path),
            path="$.format",
            rule="format",
        )
    return audit_contract(data)


__all__ = ["Audit", "Finding", "audit_contract", "audit_file", "coverage_lines", "load_contract"]
