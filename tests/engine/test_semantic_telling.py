"""Semantic mode's rules about telling: a closing message that opens as a recap may also
enact an unpaired obligation to tell the outcome, beside the action it reports (*share*);
an unpaired on-topic remark to the user is commentary, not an extra action (*cover
said*)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from matching.behaviour import extract_behaviour
from matching.evaluate import evaluate
from matching.semantic_match import RULES, rules_in_effect
from matching.validate import load_contract

from .helpers import make_contract


def _contract(tell: dict[str, str]) -> Any:
    return load_contract(
        make_contract(
            [
                {"id": "goal", "type": "intent", "label": "Handle a refund request"},
                {"id": "lookup", "label": "Look up the order", "parent": "goal"},
                {
                    "id": "refund",
                    "label": "Issue the refund to the original card",
                    "parent": "goal",
                },
                {"id": "tell", "parent": "goal", **tell},
            ],
            edges=[
                {"source": "lookup", "target": "refund", "kind": "requires"},
                {"source": "refund", "target": "tell", "kind": "requires"},
            ],
            queries=[{"id": "q1", "text": "A refund for a delivered order", "branches": {}}],
        )
    )


OUTCOME = _contract(
    {
        "label": "Tell the customer the outcome",
        "description": "Summarise what was done and what happens next.",
    }
)
# a message with a content of its own, not a report of the outcome
TIMELINE = _contract(
    {
        "label": "Tell the customer the refund timeline",
        "description": "Refunds reach the card within five business days.",
    }
)

TRACE = """[user] I want my money back for order 5521, the kettle leaks.
[tool] lookup_order(order_id="5521")
[assistant] I've found order 5521, the blue kettle.
[assistant] So, to wrap up: I've refunded the £40 to your original card.
"""


def failures(text: str, contract: Any) -> set[tuple[str, str]]:
    report = evaluate(contract, "q1", extract_behaviour(text), mode="semantic")
    return {(f["family"], f["location"]) for f in report["failures"]}


def test_a_recap_that_reports_the_last_action_also_tells_the_outcome() -> None:
    assert failures(TRACE, OUTCOME) == set()


def test_without_the_rule_the_recap_is_taken_by_the_action_and_the_outcome_is_omitted() -> None:
    with rules_in_effect(RULES.toggled("share")):
        assert failures(TRACE, OUTCOME) == {("omission", "tell")}


def test_a_closing_message_that_does_not_recap_does_not_tell_the_outcome() -> None:
    text = TRACE.replace("So, to wrap up: I've", "I've")
    assert failures(text, OUTCOME) == {("omission", "tell")}


def test_a_message_with_content_of_its_own_is_not_shared_with_the_recap() -> None:
    assert failures(TRACE, TIMELINE) == {("omission", "tell")}


def test_the_recap_is_shared_with_the_outcome_only_when_it_reads_like_it() -> None:
    with rules_in_effect(replace(RULES, share=0.99)):
        assert failures(TRACE, OUTCOME) == {("omission", "tell")}


def test_the_recap_is_paired_with_both_obligations_and_counted_once() -> None:
    report = evaluate(OUTCOME, "q1", extract_behaviour(TRACE), mode="semantic")
    pairs = {a["expected"]: a["observed"] for a in report["alignment"]}
    assert pairs["tell"] == pairs["refund"]
    # one observed step, paired once: observed precision is what it is without the rule
    with rules_in_effect(RULES.toggled("share")):
        alone = evaluate(OUTCOME, "q1", extract_behaviour(TRACE), mode="semantic")
    assert report["metrics"]["observed_precision"] == alone["metrics"]["observed_precision"]


REMARK = "[assistant] You can keep using the old kettle until the refund arrives.\n"
UPSELL = "[assistant] I've also signed you up for our weekly newsletter with seasonal promotions.\n"


def _support() -> tuple[Any, str]:
    from .test_semantic_rules import CLEAN, SUPPORT

    return SUPPORT, CLEAN


def _with(line: str) -> str:
    """The clean support trace with ``line`` said before the order is named."""
    _, clean = _support()
    anchor = "[assistant] The blue enamel kettle"
    return clean.replace(anchor, line + anchor)


def test_an_on_topic_remark_to_the_user_is_commentary_not_an_extra_action() -> None:
    contract, _ = _support()
    assert failures(_with(REMARK), contract) == set()


def test_without_the_rule_the_on_topic_remark_is_an_extra_action() -> None:
    contract, _ = _support()
    with rules_in_effect(RULES.toggled("cover_said")):
        assert {fam for fam, _ in failures(_with(REMARK), contract)} == {"extra_action"}


def test_an_off_topic_remark_to_the_user_is_still_an_extra_action() -> None:
    contract, _ = _support()
    assert {fam for fam, _ in failures(_with(UPSELL), contract)} == {"extra_action"}


def test_a_tool_call_keeps_the_higher_cover_bar() -> None:
    contract, _ = _support()
    # the same words as a tool call act on the world: the remark's bar does not apply
    call = '[tool] keep_using_old_kettle(until="refund arrives")\n'
    with rules_in_effect(replace(RULES, cover_said=0.0, adjacent=0.0)):
        assert "extra_action" in {fam for fam, _ in failures(_with(call), contract)}


def test_the_overlay_lists_the_shared_step_under_both_obligations() -> None:
    from matching.conditioning import condition
    from matching.evaluate import evaluate_detailed
    from matching.overlay import overlay_payload

    obs = extract_behaviour(TRACE)
    ev = evaluate_detailed(condition(OUTCOME, "q1"), obs, mode="semantic")
    nodes = {n["id"]: n for n in overlay_payload(ev, obs)["nodes"]}
    step = ev.alignment.shared["tell"]
    assert {"id": step, "relation": "pairs"} in nodes["tell"]["observed"]
    assert {"id": step, "relation": "pairs"} in nodes["refund"]["observed"]
    assert nodes["tell"]["satisfied"]


def _free_message_case(tail: str) -> tuple[Any, list[Any], str, Any]:
    """The refund trace with ``tail`` as the last message, and a similarity matrix in
    which that message reads best as the refund (0.50) and only weakly (0.20) as the
    outcome: no round pairs it with the outcome, and mutual does not either."""
    import numpy as np

    from matching.conditioning import condition
    from matching.match import keep_evidence

    text = TRACE.replace(
        "[assistant] So, to wrap up: I've refunded the £40 to your original card.\n", ""
    )
    text += '[tool] issue_refund(order_id="5521")\n' + tail
    kept, _ = keep_evidence(extract_behaviour(text))
    exp = condition(OUTCOME, "q1")
    act = np.zeros((len(exp.nodes), len(kept)))
    act[exp.nodes.index("refund"), -1] = 0.50
    act[exp.nodes.index("tell"), -1] = 0.20
    return exp, kept, text, act


def test_a_free_message_after_the_action_can_tell_the_outcome() -> None:
    from matching.semantic_late import share as _share

    exp, kept, text, act = _free_message_case("[assistant] The £40 is on its way to your card.\n")
    pairs = {"lookup": 0, "refund": len(kept) - 2}
    assert _share(exp, kept, text, act, pairs, RULES) == {"tell": len(kept) - 1}
    assert _share(exp, kept, text, act, pairs, replace(RULES, share_free=False)) == {}


def test_a_question_never_tells_the_outcome() -> None:
    from matching.semantic_late import share as _share

    exp, kept, text, act = _free_message_case("[assistant] Could you check your card next week?\n")
    pairs = {"lookup": 0, "refund": len(kept) - 2}
    assert _share(exp, kept, text, act, pairs, RULES) == {}


def _second_case(best: float, other: float) -> tuple[Any, list[Any], Any, dict[str, int]]:
    """The refund trace with a free last message that reads ``best`` as the refund
    (already paired with the call) and ``other`` as the still unpaired outcome."""
    exp, kept, _, act = _free_message_case("[assistant] The £40 is on its way to your card.\n")
    act[exp.nodes.index("refund"), -1] = best
    act[exp.nodes.index("tell"), -1] = other
    return exp, kept, act, {"lookup": 0, "refund": len(kept) - 2}


def test_a_step_that_only_repeats_a_paired_obligation_takes_a_close_second_choice() -> None:
    from matching.semantic_late import second_choice

    exp, kept, act, pairs = _second_case(0.32, 0.27)
    pairable = np.ones(len(exp.nodes), dtype=bool)
    none = np.zeros(len(kept), dtype=bool)
    assert second_choice(exp, kept, act, pairs, pairable, 0.25, none) == {"tell": len(kept) - 1}
    # a step that reads like an inactive branch is left to the wrong-branch rule
    assert second_choice(exp, kept, act, pairs, pairable, 0.25, ~none) == {}


def test_a_distant_second_choice_is_not_taken() -> None:
    from matching.semantic_late import second_choice

    # the step reads far better as the refund: the outcome is still omitted
    exp, kept, act, pairs = _second_case(0.60, 0.27)
    pairable = np.ones(len(exp.nodes), dtype=bool)
    none = np.zeros(len(kept), dtype=bool)
    assert second_choice(exp, kept, act, pairs, pairable, 0.25, none) == {}
    exp, kept, act, pairs = _second_case(0.30, 0.20)  # below the bar
    assert second_choice(exp, kept, act, pairs, pairable, 0.25, none) == {}
