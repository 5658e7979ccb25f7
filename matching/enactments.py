"""Enactment examples of obligations: removing, adding and harvesting them.

An enactment is how an agent typically says or does a node (FORMAT.md ``meta.enactment``,
a string or a list). Semantic matching takes the best similarity over a node's label,
description and enactments; token mode never reads them (ALGORITHMS.md §2).

The suite protocols of ``scripts/results.py`` use these helpers: the authored
enactments are removed first (they were written with the traces), then, for the
*taught* protocol, each query q gets the enactments harvested from the gold pairings
of the clean cases of the *other* queries of the same contract — never q's own.

>>> from pathlib import Path
>>> from matching.validate import load_contract
>>> c = load_contract(Path(__file__).parent / "data" / "refund-mini.json")
>>> bare = strip_enactments(c)
>>> any("enactment" in n.meta for n in bare.nodes)
False
>>> taught = with_enactments(bare, {"check_window": ["It arrived 3 days ago."]})
>>> taught.by_id["check_window"].meta["enactment"]
['It arrived 3 days ago.']
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping

from .conditioning import Expected, condition
from .formats import Case, Contract, node_texts_of_meta
from .similarity import strip_role_tag


def strip_enactments(contract: Contract) -> Contract:
    """A copy of ``contract`` without any ``meta.enactment``."""
    out = copy.deepcopy(contract)
    for n in out.nodes:
        n.meta.pop("enactment", None)
    return out


def with_enactments(contract: Contract, extra: Mapping[str, Iterable[str]]) -> Contract:
    """A copy of ``contract`` whose nodes also have the enactments of ``extra`` (node id
    -> texts), after their own; duplicates and unknown ids are ignored. The audited
    obligations themselves (label, description, type, edges) are unchanged."""
    out = copy.deepcopy(contract)
    for n in out.nodes:
        more = [t for t in extra.get(n.id, ()) if t.strip()]
        if more:
            have = node_texts_of_meta(n.meta)
            n.meta["enactment"] = list(dict.fromkeys([*have, *more]))
    return out


def harvest(cases: Iterable[Case], contract_id: str, *, exclude_query: str) -> dict[str, list[str]]:
    """Enactments from the gold pairings of the clean cases of ``contract_id`` whose
    query is not ``exclude_query``: node id -> the quotes of the observed nodes whose
    gold is that node (role tags removed), in case order, without duplicates."""
    out: dict[str, list[str]] = defaultdict(list)
    for case in cases:
        if not case.clean or case.contract != contract_id or case.query == exclude_query:
            continue
        text = case.observed.text
        for o in case.observed.nodes:
            if o.gold is None:
                continue
            quote = " ".join(strip_role_tag(text[s.start : s.end]) for s in o.evidence)
            if quote and quote not in out[o.gold]:
                out[o.gold].append(quote)
    return dict(out)


def protocol_expected(
    contracts: Mapping[str, Contract], cases: list[Case], protocol: str
) -> dict[tuple[str, str], Expected]:
    """The expected graph of every (contract, query) of ``cases`` under a protocol:
    ``authored`` (the contracts as written), ``zero-shot`` (enactments removed) or
    ``taught`` (removed, then harvested from the other queries' clean cases)."""
    if protocol not in ("authored", "zero-shot", "taught"):
        raise ValueError(f"unknown protocol {protocol!r}")
    out: dict[tuple[str, str], Expected] = {}
    bare = {k: strip_enactments(c) for k, c in contracts.items()}
    for key in dict.fromkeys((c.contract, c.query) for c in cases):
        cid, q = key
        if protocol == "authored":
            contract = contracts[cid]
        elif protocol == "zero-shot":
            contract = bare[cid]
        else:
            contract = with_enactments(bare[cid], harvest(cases, cid, exclude_query=q))
        out[key] = condition(contract, q)
    return out
