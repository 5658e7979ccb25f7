"""Rendered traces are read one way everywhere (ALGORITHMS.md §2 tool binding, §3.5)."""

from __future__ import annotations

from matching import trace
from matching.extract import extract_heuristic
from matching.llm.judge import final_response
from matching.model import Observed

TEXT = (
    "Hello there, untagged.\n"
    "[user] Refund order 7?\n"
    "[assistant] Checking the order.\n"
    "  \n"
    "  It is eligible.\n"
    "[tool] get-order(id=7)\n"
    "[result] {}\n"
    "[assistant] Refunded.\n"
    "  \n"
)


def test_events_keep_continuation_lines_and_end_at_the_last_non_blank_one() -> None:
    events = list(trace.events(TEXT))
    assert [e.role for e in events] == [None, "user", "assistant", "tool", "result", "assistant"]
    said = events[2]
    assert TEXT[said.start : said.end] == "[assistant] Checking the order.\n  \n  It is eligible."
    assert said.lines == ("[assistant] Checking the order.", "  ", "  It is eligible.")
    assert TEXT[events[-1].start : events[-1].end] == "[assistant] Refunded."


def test_the_agent_text_is_the_assistant_and_tool_events_with_blank_continuations() -> None:
    assert trace.agent_text("trace", TEXT, None) == (
        "[assistant] Checking the order.\n  \n  It is eligible.\n"
        "[tool] get-order(id=7)\n"
        "[assistant] Refunded.\n  "
    )
    assert trace.agent_text("response", "Done.", "{}") == "Done.\n{}"


def test_a_tool_name_may_hold_dashes_and_dots_but_not_start_with_a_digit() -> None:
    assert trace.tool_call("[tool] crm.get-order(id=7)") == ("crm.get-order", "id=7")
    assert trace.is_call("lookup_order()") and not trace.is_call("2fa(code=1)")
    assert not trace.is_call("Looked up the order (id 7).")


def test_the_extractor_names_a_dashed_tool_and_reads_untagged_text_as_the_agent() -> None:
    obs = extract_heuristic(TEXT, kind="trace")
    labels = [n.label for n in obs.nodes]
    assert "Called get-order" in labels
    assert "Hello there, untagged." not in labels  # a greeting, not behaviour
    assert obs.nodes[labels.index("Called get-order")].description == "id=7"


def test_the_output_only_judge_sees_the_last_assistant_message() -> None:
    obs = Observed("trace", TEXT, [], output='{"ok": true}')
    assert final_response(obs) == 'Refunded.\n\nFinal output:\n{"ok": true}'
