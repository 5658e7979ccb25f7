"""The schema check of a contract remembers the nodes and edges it accepted; it must
accept and refuse exactly the documents the whole-document validator does."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

from matching.schema_check import schema, schema_errors

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((ROOT / "fixtures" / "demo" / "refund-mini.json").read_text())
BAD_VALUES: list[Any] = ["", -1, None, True, 1.5, "no spaces allowed", [], {}, "bogus"]


def _mutate(rng: random.Random, doc: dict[str, Any]) -> None:
    """Change one value somewhere in a node, an edge, a span or the top level."""
    where = rng.choice(["node", "edge", "span", "top", "array"])
    if not all(isinstance(doc.get(k), list) and doc[k] for k in ("nodes", "edges")):
        where = "top"  # an array was replaced already
    if where == "array":
        doc[rng.choice(["nodes", "edges"])] = rng.choice([{}, "x", None, [[]], [1]])
        return
    try:
        if where == "span":
            target = rng.choice(rng.choice(doc["nodes"])["evidence"])
        else:
            target = rng.choice(doc[f"{where}s"])
    except (KeyError, IndexError, TypeError):  # changed already by the first mutation
        target = doc
    if not isinstance(target, dict):
        target = doc
    key = rng.choice([*target, "extra"])
    if rng.random() < 0.2 and key in target:
        del target[key]
    else:
        target[key] = rng.choice(BAD_VALUES)


@pytest.fixture(scope="module")
def whole():
    """The whole-document validator, compiled once (~30 ms) for every seed."""
    return fastjsonschema.compile(schema("contract"))


@pytest.mark.parametrize("seed", range(40))
def test_remembered_items_give_the_answer_of_the_whole_document_check(seed, whole) -> None:
    rng = random.Random(seed)
    assert schema_errors(copy.deepcopy(DOC), "contract") == []  # remembers its items
    for _ in range(3):
        doc = copy.deepcopy(DOC)
        for _ in range(rng.randint(1, 2)):
            _mutate(rng, doc)
        try:
            whole(copy.deepcopy(doc))
            valid = True
        except fastjsonschema.JsonSchemaException:
            valid = False
        assert (schema_errors(doc, "contract") == []) == valid
