"""Readers (FORMAT.md): errors name the file, the JSON path and the rule; writers
produce documents the readers accept."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from matching.conditioning import condition
from matching.errors import ContractEvalError
from matching.evaluate import evaluate
from matching.formats import (
    Case,
    read_case,
    read_contract,
    read_document,
    read_expected,
    read_observed,
    read_query,
    read_report,
)
from matching.validate import load_contract

from .helpers import refund_contract_doc, refund_observed_doc


def test_not_json_is_rejected_with_the_file_name() -> None:
    with pytest.raises(ContractEvalError) as info:
        read_contract("{", file="c.json")
    assert info.value.rule == "json" and str(info.value).startswith("c.json: $: not JSON")


def test_a_missing_file_is_an_io_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(ContractEvalError) as info:
        read_observed(tmp_path / "nope.json")
    assert info.value.rule == "io" and info.value.file == str(tmp_path / "nope.json")


def test_not_an_object_is_rejected() -> None:
    with pytest.raises(ContractEvalError) as info:
        read_observed("[1, 2]", file="o.json")
    assert info.value.rule == "type"


@pytest.mark.parametrize(
    "reader",
    [read_contract, read_observed, read_query, read_case, read_expected, read_report],
)
def test_wrong_format_is_rejected_by_every_reader(reader: Callable[..., Any]) -> None:
    with pytest.raises(ContractEvalError) as info:
        reader({"format": "contracteval.unknown/v9"}, file="x.json")
    assert (info.value.path, info.value.rule) == ("$.format", "format")
    assert "wrong format 'contracteval.unknown/v9'" in str(info.value)


def test_missing_format_at_the_top_is_rejected() -> None:
    doc = refund_observed_doc()
    del doc["format"]
    with pytest.raises(ContractEvalError, match='missing "format"'):
        read_observed(doc)
    assert read_observed(doc, embedded=True).nodes[0].id == "o1"


def mutated(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = refund_observed_doc()
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("doc", "path", "rule"),
    [
        (
            mutated(lambda d: d["nodes"][2]["evidence"][0].update(start=-1)),
            "$.nodes[2].evidence[0].start",
            "minimum",
        ),
        (
            mutated(lambda d: d["nodes"][2].update(colour="red")),
            "$.nodes[2]",
            "additionalProperties",
        ),
        (mutated(lambda d: d["source"].update(kind="video")), "$.source.kind", "enum"),
        (mutated(lambda d: d["nodes"][1].update(evidence=[])), "$.nodes[1].evidence", "minItems"),
        (
            mutated(lambda d: d["invariants"].append({"id": "x", "score": 1.5})),
            "$.invariants[0].score",
            "maximum",
        ),
        (mutated(lambda d: d["nodes"][0].update(id="bad id")), "$.nodes[0].id", "pattern"),
        (mutated(lambda d: d["nodes"][3].pop("label")), "$.nodes[3]", "required"),
        (mutated(lambda d: d["nodes"][2].pop("step")), "$.nodes[2]", "step"),
        (mutated(lambda d: d["nodes"][4].update(id="o1")), "$.nodes[4].id", "unique-id"),
    ],
)
def test_observed_schema_violation_names_the_json_path_and_rule(
    doc: dict[str, Any], path: str, rule: str
) -> None:
    with pytest.raises(ContractEvalError) as info:
        read_observed(doc, file="o.json")
    err = info.value
    assert (err.file, err.path, err.rule) == ("o.json", path, rule)
    assert str(err).startswith(f"o.json: {path}: ") and str(err).endswith(f"[{rule}]")


def test_an_unknown_key_outside_meta_is_an_error_but_meta_is_free_form() -> None:
    doc = refund_contract_doc()
    doc["nodes"][0]["meta"] = {"anything": {"goes": [1, 2]}}
    read_contract(doc)
    doc["nodes"][0]["colour"] = "red"
    with pytest.raises(ContractEvalError) as info:
        read_contract(doc)
    assert (info.value.path, info.value.rule) == ("$.nodes[0]", "additionalProperties")


def test_case_reader_prefixes_paths_inside_the_embedded_observed_graph() -> None:
    obs = refund_observed_doc()
    obs["nodes"][2].pop("step")
    doc = {
        "format": "contracteval.case/v1",
        "id": "refund-mini/q1/clean",
        "contract": "refund-mini",
        "query": "q1",
        "observed": obs,
        "label": {"clean": True},
    }
    with pytest.raises(ContractEvalError) as info:
        read_case(doc, file="cases.jsonl")
    assert (info.value.path, info.value.rule) == ("$.observed.nodes[2]", "step")


def test_a_case_id_may_contain_slashes_but_a_node_id_may_not() -> None:
    c = Case(
        "refund-mini/q1/omission-1",
        "refund-mini",
        "q1",
        read_observed(refund_observed_doc()),
        False,
        "omission",
        "verify_owner",
    )
    back = read_case(c.to_dict())
    assert (back.id, back.family, back.location) == (c.id, "omission", "verify_owner")
    with pytest.raises(ContractEvalError):
        read_query({"format": "contracteval.query/v1", "id": "a/b"})


def test_read_document_dispatches_on_format_and_rejects_unknown_ones() -> None:
    assert read_document(refund_observed_doc()).kind == "trace"
    with pytest.raises(ContractEvalError) as info:
        read_document({"format": "nope"})
    assert info.value.rule == "format"


def test_steps_absent_everywhere_default_to_list_positions_and_round_trip() -> None:
    doc = refund_observed_doc()
    for n in doc["nodes"]:
        n.pop("step")
    obs = read_observed(doc)
    assert [n.step for n in obs.nodes] == [0, 1, 2, 3, 4]
    again = obs.to_dict()
    assert all("step" not in n for n in again["nodes"])
    assert read_observed(again).to_dict() == again


# --------------------------------------------------------------------------- round trips


def test_every_format_round_trips_through_its_writer_and_reader() -> None:
    c = load_contract(refund_contract_doc())
    assert read_contract(c.to_dict()).to_dict() == c.to_dict()
    q = c.queries_by_id["q1"]
    assert read_query(q.to_dict()).to_dict() == q.to_dict()
    e = condition(c, q)
    assert read_expected(e.to_dict()) == e.to_dict()
    obs = read_observed(refund_observed_doc())
    assert read_observed(obs.to_dict()).to_dict() == obs.to_dict()
    for mode in ("oracle", "token"):
        report = evaluate(c, q, obs, mode=mode)
        assert read_report(copy.deepcopy(report)) == report
    case = Case("refund-mini/q1/clean", "refund-mini", "q1", obs, True)
    assert read_case(case.to_dict()).to_dict() == case.to_dict()
    # and through JSON text, as files hold them
    for doc in (c.to_dict(), e.to_dict(), obs.to_dict(), case.to_dict()):
        assert read_document(json.dumps(doc)) is not None


def test_the_contract_writer_adds_exact_quotes() -> None:
    doc = refund_contract_doc()
    for n in doc["nodes"]:
        for s in n["evidence"]:
            s.pop("quote", None)
    c = read_contract(doc)
    out = c.to_dict()
    text = out["artifact"]["text"]
    assert all(
        s["quote"] == text[s["start"] : s["end"]] for n in out["nodes"] for s in n["evidence"]
    )
