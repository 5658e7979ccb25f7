"""Perturbation generators of the controlled suite (ALGORITHMS.md §5).

Each generator turns a clean gold execution into one case whose label is true by
construction: it edits ``source.text`` together with the nodes, recomputes every span,
renumbers steps in text order, and keeps a candidate only when the oracle evaluator
reports exactly the label's (family, location) and nothing else.

Choices: the candidates of a family are listed in a fixed order (declaration order of
the contract, then observed order); the generator shuffles that list once with
``random.Random(f"{seed}:{clean_id}:{family}")`` and tries the candidates in the shuffled
order, drawing any further choice (an enactment wording, an insertion point, a
corruption) from the same generator. The first candidate that verifies is kept.

>>> from pathlib import Path
>>> from matching.formats import read_observed, Case
>>> from matching.validate import load_contract
>>> data = Path(__file__).parents[1] / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> clean = Case("refund-mini/q1/clean", "refund-mini", "q1",
...              read_observed(data / "refund-mini-observed-q1.json"), True)
>>> case = perturb_case(c, clean, "ordering", seed=0)
>>> case.family, case.location
('ordering', 'approve_refund->confirm_outcome')
"""

from __future__ import annotations

import random

from ..conditioning import Expected, condition
from ..evaluate import evaluate_detailed
from ..model import FAMILIES, Case, Contract
from .generators import GENERATORS, UNSUPPORTED_ACTIONS, Ctx

__all__ = ["FAMILIES", "UNSUPPORTED_ACTIONS", "perturb_case"]


def perturb_case(
    contract: Contract,
    clean: Case,
    family: str,
    *,
    seed: int = 0,
    expected: Expected | None = None,
) -> Case | None:
    """One perturbed case of ``family`` made from ``clean``, or None (skipped).

    Parameters
    ----------
    contract : Contract
        The audited contract of the clean case.
    clean : Case
        A clean gold case (ALGORITHMS.md §5).
    family : str
        One of :data:`FAMILIES`.
    seed : int
        The suite's seed; with the case id and family it seeds every choice.
    expected : Expected, optional
        G_E of the case's query, when the caller has it already.

    Returns
    -------
    Case or None
        The first candidate the oracle evaluator reports as exactly
        ``[(family, location)]``, with no dropped node; None when no candidate does.

    Raises
    ------
    ValueError
        For an unknown ``family``.
    """
    if family not in GENERATORS:
        raise ValueError(f"unknown family {family!r}: expected one of {FAMILIES}")
    e = expected or condition(contract, clean.query)
    rng = random.Random(f"{seed}:{clean.id}:{family}")
    ctx = Ctx(contract, e, clean, rng)
    candidates = list(GENERATORS[family](ctx))
    rng.shuffle(candidates)
    for location, make in candidates:
        obs = make()
        if obs is None:
            continue
        result = evaluate_detailed(e, obs, mode="oracle")
        got = [(f["family"], f["location"]) for f in result.failures]
        if got == [(family, location)] and not result.alignment.dropped:
            return Case(
                id="",
                contract=clean.contract,
                query=clean.query,
                observed=obs,
                clean=False,
                family=family,
                location=location,
            )
    return None
