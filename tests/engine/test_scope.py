"""Calls outside the query's scope (matching.scope): which calls are read as actions
the procedure does not call for, and how semantic mode reports them. Token mode, the
spec's literal reading, does not read them."""

from __future__ import annotations

from typing import Any

from matching.behaviour import extract_behaviour
from matching.conditioning import condition
from matching.confidence import TRACE_FEATURES
from matching.evaluate import evaluate_detailed
from matching.match import Alignment
from matching.model import ObservedNode, Span
from matching.scope import out_of_scope_calls, out_of_scope_offers, scope_failures
from matching.validate import load_contract

from .helpers import make_contract


def closure(branch: str = "refused", **tools: str) -> Any:
    """Close an account: look it up, then close it where eligible or refuse; a second
    intent hands the customer over to a human."""
    bound = {"find": "find_account", "close": "close_account", "hand_over": "transfer"}
    bound.update(tools)
    nodes: list[dict[str, Any]] = [
        {"id": "goal", "type": "intent", "label": "Close the customer's account"},
        {"id": "find", "label": "Find the account", "parent": "goal"},
        {"id": "eligible", "type": "decision", "label": "Can it be closed?", "parent": "goal"},
        {"id": "allowed", "type": "branch_condition", "parent": "eligible", "required": False},
        {"id": "close", "label": "Close the account", "parent": "allowed"},
        {"id": "refused", "type": "branch_condition", "parent": "eligible", "required": False},
        {"id": "refuse", "type": "refusal", "label": "Refuse the closure", "parent": "refused"},
        {"id": "human", "type": "intent", "label": "Hand the customer over to a human"},
        {"id": "hand_over", "label": "Transfer to a human agent", "parent": "human"},
    ]
    for n in nodes:
        if bound.get(n["id"]):
            n["meta"] = {"tool": bound[n["id"]]}
    return load_contract(
        make_contract(
            nodes,
            edges=[
                {"source": "eligible", "target": "allowed", "kind": "branches_to"},
                {"source": "eligible", "target": "refused", "kind": "branches_to"},
                {"source": "find", "target": "eligible", "kind": "requires"},
            ],
            queries=[
                {
                    "id": "q1",
                    "text": "Close my account",
                    "intents": ["goal"],
                    "branches": {"eligible": branch},
                }
            ],
        )
    )


CLOSED = """[user] Please close my account ending 4471.
[tool] find_account(last4="4471")
[result] {"id": "A-1", "balance": 120}
[assistant] Your account still holds a balance. Shall I close it anyway?
[user] Yes.
[tool] close_account(id="A-1")
[result] {"status": "closed"}
[assistant] Your account is closed.
"""


def calls(contract: Any, text: str = CLOSED) -> list[tuple[str, int, tuple[str, ...]]]:
    found = out_of_scope_calls(condition(contract, "q1"), text)
    return [(s.call.name, s.call.line, s.bound_by) for s in found]


def test_a_call_only_an_inactive_branch_binds_is_out_of_scope() -> None:
    assert calls(closure("refused")) == [("close_account", 6, ("close",))]


def test_a_call_the_active_branch_binds_is_in_scope() -> None:
    assert calls(closure("allowed")) == []


def test_a_call_of_an_intent_the_query_does_not_activate_is_out_of_scope() -> None:
    text = CLOSED.replace('close_account(id="A-1")', 'transfer(reason="closure")')
    assert calls(closure("allowed"), text) == [("transfer", 6, ("hand_over",))]


def test_a_lookup_is_never_out_of_scope() -> None:
    # the inactive branch binds a lookup: reading is not acting
    assert (
        calls(
            closure("refused", close="get_account_status"),
            CLOSED.replace('close_account(id="A-1")', 'get_account_status(id="A-1")'),
        )
        == []
    )


def test_a_tool_the_contract_binds_nowhere_is_not_judged() -> None:
    text = CLOSED.replace('close_account(id="A-1")', 'send_passcode(phone="…71")')
    assert calls(closure("refused"), text) == []


def test_a_tool_an_active_obligation_also_binds_is_in_scope() -> None:
    assert calls(closure("refused", refuse="close_account")) == []


def test_semantic_mode_reports_the_call_as_a_certain_failure_naming_it() -> None:
    ev = evaluate_detailed(
        condition(closure("refused"), "q1"), extract_behaviour(CLOSED), mode="semantic"
    )
    scoped = [f for f in ev.failures if "close_account (line 6)" in f["detail"]]
    assert len(scoped) == 1
    assert scoped[0]["family"] in ("wrong_branch", "extra_action")
    assert scoped[0]["probability"] == 1.0
    assert [s.call.name for s in ev.out_of_scope] == ["close_account"]
    assert ev.confidence == {"p_violation": 1.0, "verdict": "violation"}


def test_the_verdict_model_reads_the_pair_models_probability_not_the_checks() -> None:
    ev = evaluate_detailed(
        condition(closure("refused"), "q1"), extract_behaviour(CLOSED), mode="semantic"
    )
    assert ev.features is not None
    read = dict(zip(TRACE_FEATURES, ev.features, strict=True))
    (claimed,) = ev.checked
    family = claimed["family"]
    assert claimed["probability"] == 1.0
    assert read[f"{family}_count"] >= 1
    assert 0.0 < read[f"{family}_max"] < 1.0


def test_semantic_mode_reads_a_call_in_scope_as_no_failure() -> None:
    ev = evaluate_detailed(
        condition(closure("allowed"), "q1"), extract_behaviour(CLOSED), mode="semantic"
    )
    assert ev.out_of_scope == []
    assert not any("close_account (line" in f["detail"] for f in ev.failures)


def test_token_mode_does_not_read_scope() -> None:
    ev = evaluate_detailed(
        condition(closure("refused"), "q1"), extract_behaviour(CLOSED), mode="token"
    )
    assert ev.out_of_scope == []
    assert ev.checked == []


# scope_failures against hand-made alignments: which failure a call makes certain

TEXT = '[tool] close_account(id="A-1")\n'


def alignment(**kw: Any) -> Alignment:
    step = ObservedNode("o1", "Called close_account", [Span(0, len(TEXT) - 1)], 1)
    return Alignment("semantic", [step], [], {}, {}, **kw)


def judged(m: Alignment, found: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    e = condition(closure("refused"), "q1")
    return scope_failures(e, m, out_of_scope_calls(e, TEXT), found)


def test_the_alignments_extra_action_at_the_call_is_claimed_and_named() -> None:
    extra = {"family": "extra_action", "location": "o1", "detail": "enacts nothing"}
    claimed, added = judged(alignment(extra=["o1"]), [extra])
    assert claimed == [extra] and added == []
    assert "calls close_account (line 1)" in extra["detail"]


def test_the_wrong_branch_the_call_was_folded_into_is_claimed() -> None:
    wrong = {"family": "wrong_branch", "location": "eligible", "detail": "acts on allowed"}
    m = alignment(wrong_branch={"eligible": ["o1"]}, wrong_branch_of={"o1": "close"})
    claimed, added = judged(m, [wrong])
    assert claimed == [wrong] and added == []


def test_a_call_the_alignment_paired_gets_an_extra_action_of_its_own() -> None:
    claimed, added = judged(alignment(), [])
    assert claimed == added
    assert [(f["family"], f["location"]) for f in added] == [("extra_action", "o1")]


def test_a_call_no_kept_step_holds_is_not_judged() -> None:
    m = alignment()
    m.kept[0].evidence[:] = [Span(40, 50)]
    assert judged(m, []) == ([], [])


def test_a_call_whose_json_arguments_run_over_several_lines_is_read() -> None:
    text = CLOSED.replace(
        'close_account(id="A-1")', 'close_account({\n  "id": "A-1",\n  "reason": "moving"\n})'
    )
    assert calls(closure("refused"), text) == [("close_account", 6, ("close",))]


def test_each_out_of_scope_call_is_named_in_the_failure_that_claims_it() -> None:
    text = CLOSED + '[tool] close_account(id="A-2")\n[result] {"status": "closed"}\n'
    ev = evaluate_detailed(
        condition(closure("refused"), "q1"), extract_behaviour(text), mode="semantic"
    )
    assert [s.call.line for s in ev.out_of_scope] == [6, 9]
    assert all(f["probability"] == 1.0 for f in ev.checked)
    details = " ".join(f["detail"] for f in ev.checked)
    assert "close_account (line 6)" in details and "close_account (line 9)" in details


# offers: a sentence that puts an out-of-scope call to the user

REFUSED = """[user] Please close my account ending 4471.
[tool] find_account(last4="4471")
[result] {"id": "A-1", "balance": 120}
[assistant] I'm sorry, but an account with a balance cannot be closed. {offer}
[user] No thanks.
"""


def offers(offer: str, contract: Any = None) -> list[tuple[str, int, str]]:
    text = REFUSED.replace("{offer}", offer)
    found = out_of_scope_offers(condition(contract or closure("allowed"), "q1"), text)
    return [(s.call.name, s.call.line, s.said) for s in found]


def test_an_offer_to_call_a_tool_of_an_inactive_intent_is_out_of_scope() -> None:
    said = "Would you like me to transfer you to a human agent?"
    assert offers(said) == [("transfer", 4, said)]


def test_offers_in_other_words_and_inflections_are_read() -> None:
    for said in (
        "If you'd like, I can transfer you to a colleague.",
        "I'd be happy to transfer you now.",
        "I'll transfer you.",
        "We could go ahead and transfer your case.",
    ):
        assert offers(said) == [("transfer", 4, said)], said


def test_a_negation_or_another_verb_is_not_an_offer() -> None:
    for said in (
        "I cannot transfer you to a human agent.",
        "I'm unable to transfer you.",
        "I can't transfer you.",
        "I can look into the transfer rules.",
        "A transfer is not possible here.",
    ):
        assert offers(said) == [], said


def test_an_offer_must_name_every_word_of_the_tools_name() -> None:
    contract = closure("refused")  # close_account is bound to the inactive branch only
    assert offers("Shall I close the account anyway?", contract)[0][0] == "close_account"
    assert offers("Shall I close this ticket?", contract) == []


def test_an_offer_of_a_tool_in_scope_is_not_judged() -> None:
    assert offers("Shall I close the account anyway?", closure("allowed")) == []


def test_semantic_mode_reports_the_offer_as_a_certain_extra_action() -> None:
    said = "Would you like me to transfer you to a human agent?"
    text = REFUSED.replace("{offer}", said)
    ev = evaluate_detailed(
        condition(closure("refused"), "q1"), extract_behaviour(text), mode="semantic"
    )
    (claimed,) = ev.checked
    assert claimed["family"] in ("extra_action", "wrong_branch")
    assert f"offers to call transfer (line 4: {said!r})" in claimed["detail"]
    assert claimed["probability"] == 1.0
    assert ev.confidence == {"p_violation": 1.0, "verdict": "violation"}


def test_a_giving_verb_offers_the_tools_object() -> None:
    contract = closure("refused", close="issue_refund")  # the refund is the inactive branch's
    for said in ("I can offer you a refund instead.", "We could issue a partial refund today."):
        assert offers(said, contract) == [("issue_refund", 4, said)], said


def test_a_giving_verb_offers_only_the_object_that_follows_it() -> None:
    contract = closure("refused", close="issue_refund")
    for said in (
        "I can offer some help with the paperwork for any later refund.",
        "I cannot offer a refund.",
    ):
        assert offers(said, contract) == [], said
