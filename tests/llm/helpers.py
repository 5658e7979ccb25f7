"""A tiny suite written from matching/data/refund-mini*.json, and scripted answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matching
from matching.formats import Case, read_observed
from matching.perturb import perturb_case
from matching.suite import write_suite
from matching.validate import load_contract

DATA = Path(matching.__file__).parent / "data"


def contract():  # type: ignore[no-untyped-def]
    return load_contract(DATA / "refund-mini.json")


def clean_case() -> Case:
    obs = read_observed(DATA / "refund-mini-observed-q1.json")
    return Case("refund-mini/q1/clean", "refund-mini", "q1", obs, True)


def tiny_suite(path: Path, families: tuple[str, ...] = ("omission", "ordering")) -> list[Case]:
    """The clean q1 case and one perturbed case per family, as a suite folder."""
    c = contract()
    clean = clean_case()
    cases = [clean]
    for fam in families:
        made = perturb_case(c, clean, fam, seed=0)
        assert made is not None, fam
        made.id = f"refund-mini/q1/{fam}-1"
        cases.append(made)
    write_suite(path, [c], cases)
    return cases


def gold_proposals_answer() -> dict[str, Any]:
    """What a perfect compiler would answer for refund-mini: the audited graph itself."""
    c = contract()
    return {
        "nodes": [
            {
                "key": n.id,
                "type": n.type,
                "label": n.label,
                "description": n.description,
                "quote": c.text[n.evidence[0].start : n.evidence[0].end],
                "parent": n.parent,
                "required": n.required,
                "score": 0.9,
                "justification": "stated in the artifact",
            }
            for n in c.nodes
        ],
        "edges": [e.to_dict() for e in c.edges],
        "invariants": [
            {
                "key": i.id,
                "label": i.label,
                "description": i.description,
                "quote": c.text[i.evidence[0].start : i.evidence[0].end],
                "score": 0.9,
                "justification": "a rule",
            }
            for i in c.invariants
        ],
    }


def gold_extraction_answer(case: Case) -> dict[str, Any]:
    """What a perfect extractor would answer: the gold nodes, quoted, without gold ids."""
    obs = case.observed
    return {
        "nodes": [
            {
                "quote": obs.text[n.evidence[0].start : n.evidence[0].end],
                "label": n.label,
                "description": n.description,
                "type": n.type,
            }
            for n in obs.nodes
        ]
    }
