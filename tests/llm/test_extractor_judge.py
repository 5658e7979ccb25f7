"""The LLM extractor and the LLM judges against the fake server."""

from __future__ import annotations

import json

import pytest

from matching.conditioning import condition
from matching.evaluate import evaluate_detailed
from matching.extractors import get_extractor
from matching.llm.client import LLMClient, LLMError
from matching.llm.extractor import LLMExtractor
from matching.llm.judge import (
    VERDICT_SCHEMA,
    checklist,
    judge_case,
    judge_invariant,
    judge_invariants,
    judge_suite,
)
from matching.suite import load_suite, score

from .fake_openai import FakeOpenAI, completion
from .helpers import clean_case, contract, gold_extraction_answer, tiny_suite


def test_extractor_locates_quotes_orders_steps_and_drops_hallucinations(
    server: FakeOpenAI, client: LLMClient
):
    case = clean_case()
    text = case.observed.text
    answer = gold_extraction_answer(case)
    # Listed out of order, one quote without its role tag, one invented step.
    nodes = answer["nodes"]
    nodes[1]["quote"] = nodes[1]["quote"].removeprefix("[assistant] ")
    nodes.insert(
        2,
        {
            "quote": "I also cancelled your account.",
            "label": "Cancelled the account",
            "description": "",
            "type": "action",
        },
    )
    answer["nodes"] = [nodes[3], *nodes[:3], *nodes[4:]]
    server.push(completion(answer))
    ext = LLMExtractor(client=client)
    obs = ext(text, kind="trace")
    assert [n.id for n in obs.nodes] == ["o1", "o2", "o3", "o4", "o5"]
    assert [n.step for n in obs.nodes] == [0, 1, 2, 3, 4]
    starts = [n.evidence[0].start for n in obs.nodes]
    assert starts == sorted(starts)
    for n in obs.nodes:
        s = n.evidence[0]
        assert text[s.start : s.end] == s.quote
        assert n.gold is None
    assert [d.label for d in ext.dropped] == ["Cancelled the account"]
    assert [(e.source, e.target) for e in obs.edges][0] == ("o1", "o2")
    # Good extraction → the token matcher finds the execution clean.
    obs.output = case.observed.output
    ev = evaluate_detailed(condition(contract(), "q1"), obs, mode="token")
    assert ev.verdict == "clean", ev.failures


def test_extractor_never_sees_the_contract(server: FakeOpenAI, client: LLMClient):
    case = clean_case()
    server.push(completion({"nodes": []}))
    LLMExtractor(client=client)(case.observed.text, kind="trace")
    sent = json.dumps(server.requests[0])
    for node_id in ("verify_owner", "check_window", "approve_refund", "within_window"):
        assert node_id not in sent
    assert "[assistant]" in server.system_message()  # the trace rendering is explained


def test_get_extractor_llm_uses_the_configured_server(llm_env: FakeOpenAI):
    ext = get_extractor("llm")
    assert isinstance(ext, LLMExtractor)
    llm_env.push(
        completion(
            {
                "nodes": [
                    {
                        "quote": "Hello there, all done.",
                        "label": "Done",
                        "description": "",
                        "type": None,
                    }
                ]
            }
        )
    )
    obs = ext("Hello there, all done.", kind="response")
    assert [(n.label, n.type, n.evidence[0].end) for n in obs.nodes] == [("Done", None, 22)]
    # One shared client per configuration: a suite run reuses it and sums its usage.
    again = get_extractor("llm")
    assert isinstance(again, LLMExtractor) and again.client is ext.client
    assert ext.client.usage()["calls"] == 1


def test_get_extractor_llm_without_key_warns_and_falls_back():
    from matching.extractors import FallbackWarning

    with pytest.warns(FallbackWarning, match="heuristic extractor"):
        ext = get_extractor("llm")
    assert ext.__name__ == "extract_heuristic"


def verdict(clean: bool, family: str | None, why: str = "because") -> dict[str, object]:
    return {"clean": clean, "family": family, "rationale": why}


@pytest.mark.parametrize("kind", ["output", "trace", "trace-checklist", "expected"])
def test_judge_inputs_per_kind(server: FakeOpenAI, client: LLMClient, kind: str):
    c, case = contract(), clean_case()
    e = condition(c, "q1")
    server.push(completion(verdict(True, None)))
    v = judge_case(client, kind, c, e, case.observed)
    assert (v.clean, v.family, v.verdict) == (True, None, "clean")
    assert server.requests[0]["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    body = sections(server.user_messages()[0])
    # Plain text, not an escaped JSON string: the artifact's lines are lines.
    assert body["INSTRUCTIONS"] == c.text and body["REQUEST"] == e.query.text
    assert body["FINAL RESPONSE"].startswith("Your refund of $59.00")
    assert body["FINAL RESPONSE"].endswith(case.observed.output or "")
    assert ("TRACE" in body) == (kind != "output")
    if kind != "output":
        assert body["TRACE"].rstrip("\n") == case.observed.text.rstrip("\n")
    assert ("CHECKLIST" in body) == (kind == "trace-checklist")
    assert ("EXPECTED GRAPH" in body) == (kind == "expected")
    if kind == "trace-checklist":
        assert "- Verify the purchase belongs to the customer" in body["CHECKLIST"]
        assert "verify_owner" not in body["CHECKLIST"]  # labels only
    if kind == "expected":
        graph = json.loads(body["EXPECTED GRAPH"])
        assert graph["decisions"] == {"check_window": "within_window"}
        assert [n["id"] for n in graph["nodes"]] == e.nodes


def sections(user: str) -> dict[str, str]:
    """The named sections of a data block (``### NAME <tag>`` lines)."""
    begin = user.index("BEGIN DATA ")
    tag = user[begin:].split("\n", 1)[0].removeprefix("BEGIN DATA ")
    block = user[user.index("\n", begin) + 1 : user.rindex(f"\nEND DATA {tag}")]
    out: dict[str, str] = {}
    for chunk in block.split("### ")[1:]:
        head, _, text = chunk.partition("\n")
        out[head.removesuffix(f" {tag}")] = text.removesuffix("\n")
    return out


def test_verdict_parsing_and_repairs(server: FakeOpenAI, client: LLMClient):
    c, case = contract(), clean_case()
    e = condition(c, "q1")
    server.push(
        completion(verdict(False, "omission", "skipped the email check")),
        completion(verdict(True, "ordering")),  # inconsistent: repaired
        completion(verdict(True, None)),
        completion(verdict(False, "hallucination")),  # not a family: repaired
        completion(verdict(False, "extra_action")),
        completion(verdict(False, None)),  # no family
        completion(verdict(False, None)),  # still none: fails
    )
    v = judge_case(client, "trace", c, e, case.observed)
    assert (v.verdict, v.family, v.rationale) == (
        "non_clean",
        "omission",
        "skipped the email check",
    )
    assert judge_case(client, "trace", c, e, case.observed).clean is True
    assert "family null" in server.requests[2]["messages"][-1]["content"]
    assert judge_case(client, "output", c, e, case.observed).family == "extra_action"
    assert "schema violation at $.family" in server.requests[4]["messages"][-1]["content"]
    with pytest.raises(LLMError, match="must name a family"):
        judge_case(client, "output", c, e, case.observed)
    with pytest.raises(ValueError):
        judge_case(client, "vibes", c, e, case.observed)


def test_judge_suite_scores_families_without_locations(
    server: FakeOpenAI, client: LLMClient, tmp_path
):
    tiny_suite(tmp_path)
    suite = load_suite(tmp_path)
    server.push(
        completion(verdict(True, None)),
        completion(verdict(False, "omission")),
        completion("broken"),
        completion("broken"),  # the ordering case errors
    )
    results, verdicts = judge_suite(suite, "trace", client)
    assert [r.verdict for r in results] == ["clean", "non_clean", None]
    assert "invalid after one repair" in (verdicts[2]["error"])
    s = score(results, locations=False)
    assert s["detection_accuracy"] == round(2 / 3, 6)
    assert s["per_family"]["omission"]["detection"] == 1.0
    assert s["per_family"]["ordering"]["detection"] == 0.0
    assert s["localization"] is None and s["per_family"]["omission"]["localization"] is None
    assert len(s["errors"]) == 1


def test_invariant_judge(server: FakeOpenAI, client: LLMClient):
    c, case = contract(), clean_case()
    inv = c.invariants[0]
    server.push(
        completion({"score": 1.4, "rationale": "x"}),
        completion({"score": 0.0, "rationale": "printed the card"}),
    )
    s = judge_invariant(client, inv, case.observed)
    assert (s.score, s.rationale) == (0.0, "printed the card")
    assert "score must be in [0, 1]" in server.requests[1]["messages"][-1]["content"]
    assert inv.label in server.user_messages(0)[0]
    # Invariants with a machine check are never sent to the judge.
    assert judge_invariants(client, condition(c, "q1"), case.observed) == {}
    assert len(server.requests) == 2


def test_checklist_is_labels_only():
    e = condition(contract(), "q1")
    items = checklist(e)
    assert "Look up the order" in items and "Rule: Never reveal a full card number" in items
    assert not any("_" in x for x in items)
