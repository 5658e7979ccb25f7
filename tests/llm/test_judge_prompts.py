"""Judge inputs: plain-text sections, alternatives in the checklist, long traces in parts."""

from __future__ import annotations

import json

from matching.conditioning import condition
from matching.formats import Observed
from matching.llm.client import LLMClient
from matching.llm.judge import checklist, judge_case, judge_invariant
from matching.llm.proposer import propose_llm
from matching.validate import load_contract

from .fake_openai import FakeOpenAI, completion
from .helpers import DATA, clean_case, contract


def verdict(clean: bool, family: str | None, why: str = "because") -> dict[str, object]:
    return {"clean": clean, "family": family, "rationale": why}


def test_checklist_marks_alternatives_and_optional_steps():
    doc = json.loads((DATA / "refund-mini.json").read_text())
    for n in doc["nodes"]:
        if n["id"] == "outside_window":
            n["combine"] = "any"
        if n["id"] == "confirm_outcome":
            n["required"] = False
    items = checklist(condition(load_contract(doc), "q2"))
    assert (
        "One of these alternatives (any one suffices): Decline the refund | Offer store credit"
        in items
    )
    assert "Decline the refund" not in items  # not listed as if both were required
    assert "Confirm the outcome to the customer (optional)" in items
    assert "Order older than 30 days" in items  # the chosen branch is no optional step


def test_long_trace_is_judged_in_parts_and_a_partial_omission_is_not_one(
    server: FakeOpenAI,
    make_client,  # type: ignore[no-untyped-def]
):
    client: LLMClient = make_client(chunk_chars=200)
    c, case = contract(), clean_case()
    parts = -(-len(case.observed.text) // 150)  # at least this many 200-char pieces
    server.push(completion(verdict(False, "omission", "no email check here")))
    server.push(*[completion(verdict(True, None, "fine"))] * 20)
    v = judge_case(client, "trace", c, condition(c, "q1"), case.observed)
    assert v.clean  # the step "missing" from part 1 is in another part
    assert len(server.requests) >= min(parts, 3)
    users = [server.user_messages(i)[0] for i in range(len(server.requests))]
    n = len(server.requests)
    assert all(f"### TRACE (PART {i + 1} OF {n}) " in u for i, u in enumerate(users))
    assert all(c.text in u for u in users)  # every part sees the whole instructions


def test_long_trace_ordering_in_one_part_fails_the_whole(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    client: LLMClient = make_client(chunk_chars=200)
    c, case = contract(), clean_case()
    server.push(completion(verdict(True, None)), completion(verdict(False, "ordering", "late")))
    server.push(*[completion(verdict(True, None))] * 20)
    v = judge_case(client, "trace", c, condition(c, "q1"), case.observed)
    assert (v.clean, v.family, v.rationale) == (False, "ordering", "late")


def test_invariant_judge_sections_and_parts(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    client: LLMClient = make_client(chunk_chars=200)
    inv = contract().invariants[0]
    obs = Observed("trace", "[assistant] Fine.\n" * 30, [], output='{"ok": true}')
    server.push(
        completion({"score": 1.0, "rationale": "kept"}),
        completion({"score": 0.1, "rationale": "shown in part 2"}),
        *[completion({"score": 0.9, "rationale": "kept"})] * 10,
    )
    score = judge_invariant(client, inv, obs)
    assert (score.score, score.rationale) == (0.1, "shown in part 2")
    first = server.user_messages(0)[0]
    assert "### RULE " in first and inv.label in first
    assert "### FINAL OUTPUT " in first and '{"ok": true}' in first
    assert first.index("BEGIN DATA") < first.index("### RULE")  # the rule is data too


def test_already_proposed_goes_inside_the_data_block(server: FakeOpenAI, make_client):  # type: ignore[no-untyped-def]
    client: LLMClient = make_client(chunk_chars=200)
    text = "".join(
        f"{i}. Check the customer record number {i} before anything else.\n" for i in range(8)
    )
    first = {
        "nodes": [
            {
                "key": "k1",
                "type": "validation",
                "label": "Check record zero",
                "description": "",
                "quote": "Check the customer record number 0 before anything else.",
                "parent": None,
                "required": True,
                "score": 0.8,
                "justification": "stated",
            }
        ],
        "edges": [],
        "invariants": [],
    }
    empty = {"nodes": [], "edges": [], "invariants": []}
    server.push(completion(first), *[completion(empty)] * 10)
    propose_llm(text, client=client)
    second = server.user_messages(1)[0]
    begin = second.index("BEGIN DATA")
    assert begin < second.index("Already proposed") < second.index('"id": "check_record_zero"')
    assert "### INSTRUCTION ARTIFACT (PART 2 OF" in second
