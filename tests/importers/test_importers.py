"""Every importer on a realistic sample written for these tests (tests/importers/samples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matching.errors import ContractEvalError
from matching.importers import detect_kind, last_agent_message, render, trajectories

SAMPLES = Path(__file__).parent / "samples"


def load(name: str):  # type: ignore[no-untyped-def]
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def test_tau_bench_results_file_needs_a_choice_and_lists_what_is_there():
    data = load("tau_results.json")
    assert detect_kind(data) == "tau_bench_results"
    with pytest.raises(ContractEvalError) as info:
        render("tau_bench_results", data)
    msg = str(info.value)
    assert "the file holds 3 trajectories" in msg
    assert "task_id=0,trial=1 (reward 0.0)" in msg and "task_id=4,trial=0 (reward 1.0)" in msg
    assert trajectories(data)[1] == {"task_id": 0, "trial": 1, "reward": 0.0}


def test_tau_bench_trajectory_is_what_the_agent_did():
    data = load("tau_results.json")
    text = render("tau_bench_results", data, select={"task_id": "0", "trial": "1"})
    assert text.splitlines()[-1] == (
        "[assistant] Sorry, I could not find a return option for that order."
    )
    assert '[tool] get_order_details(order_id="#W5521")' in text
    # The reference solution's return call is NOT in the failed trial's trace.
    assert "return_delivered_order_items" not in text
    text = render("tau_bench_results", data, select={"task_id": "4", "trial": "0"})
    assert (
        '[tool] return_delivered_order_items(order_id="#W9034", item_ids=["7741"],'
        ' payment_method_id="credit_card_118")' in text
    )
    with pytest.raises(ContractEvalError, match="no entry matches"):
        render("tau_bench_results", data, select={"task_id": "9"})


def test_tau_bench_traj_list_is_a_chat_transcript():
    traj = load("tau_results.json")[2]["traj"]
    assert detect_kind(traj) == "openai"
    assert render("openai", traj) == render(
        "tau_bench_results", load("tau_results.json"), select={"task_id": "4", "trial": "0"}
    )
    assert detect_kind(load("tau_results.json")[0]) == "tau_bench_results"  # one entry


def test_tau_bench_reference_actions_are_refused_as_such():
    task = load("tau_task.json")
    with pytest.raises(ContractEvalError, match="reference solution"):
        detect_kind(task)
    with pytest.raises(ContractEvalError, match="reference solution"):
        detect_kind(load("tau_results.json")[0]["info"])
    with pytest.raises(ContractEvalError, match="reference solution"):
        render("tau_bench", task)


def test_openai_legacy_function_call_and_refusal_are_kept():
    data = load("openai_legacy.json")
    assert detect_kind(data) == "openai"
    lines = render("openai", data).splitlines()
    assert lines[2] == '[tool] get_booking(booking_ref="TR-88")'
    assert lines[3] == '[result] {"status": "cancelled_by_operator", "fare": 42.5}'
    assert (
        lines[-1] == "[assistant] I can't refund a booking for someone who has not authorised it."
    )


def test_openai_responses_items():
    data = load("openai_responses.json")
    assert detect_kind(data) == "openai_responses"
    assert render("openai_responses", data) == (
        "[system] You book meeting rooms. Confirm the slot before booking.\n"
        "[user] Book room Juniper tomorrow at 10 for an hour.\n"
        '[tool] check_availability(room="Juniper", start="10:00", minutes=60)\n'
        '[result] {"free": true}\n'
        "[assistant] Juniper is free tomorrow 10:00-11:00. Shall I book it?\n"
    )
    response = {"object": "response", "instructions": "Be brief.", "output": data[2:]}
    assert detect_kind(response) == "openai_responses"
    assert render("openai_responses", response).startswith("[system] Be brief.\n[tool] check_")


def test_anthropic_messages_keep_system_calls_and_results():
    data = load("anthropic.json")
    assert detect_kind(data) == "anthropic"
    text = render("anthropic", data)
    assert text.startswith("[system] You are the claims assistant of Hollin Insurance.")
    assert '[tool] get_policy(policy_id="HP-2231")\n[result] {"cover": "theft"' in text
    assert "[result] error: crime reference number required\n" in text
    assert "Look up the policy first" not in text  # thinking is private
    assert detect_kind(data["messages"]) == "anthropic"  # the messages alone


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("langchain_messages_to_dict.json", '[tool] verify_prescription(rx_id="RX-5567")'),
        ("langchain_model_dump.json", '[tool] update_address(order_id=311, address="4 Elm Row")'),
    ],
)
def test_langchain_dumps(name: str, call: str):
    data = load(name)
    assert detect_kind(data) == "langchain"
    text = render("langchain", data)
    assert call in text and text.count("[tool]") == 1  # additional_kwargs is not a 2nd call
    assert text.splitlines()[-1].startswith("[assistant] ")


def test_langchain_tuples():
    data = [["human", "What is my balance?"], ["ai", "Your balance is 12 euros."]]
    assert detect_kind(data) == "langchain"
    assert render("langchain", data) == (
        "[user] What is my balance?\n[assistant] Your balance is 12 euros.\n"
    )


def test_otel_openllmetry_indexed_attributes_use_the_last_chat_span():
    data = load("otel_openllmetry.json")
    assert detect_kind(data) == "otel"
    assert render("otel", data) == (
        "[system] You reset passwords. Verify identity with the last 4 digits of the phone"
        " number.\n"
        "[user] Reset the password of account dana.w\n"
        '[tool] verify_phone_digits(account="dana.w", digits="0912")\n'
        "[result] verified\n"
        "[assistant] Identity verified. I have sent a reset link to the phone number on file.\n"
    )


def test_otel_semantic_convention_messages():
    data = load("otel_semconv.json")
    assert detect_kind(data) == "otel"
    text = render("otel", data)
    assert text.startswith("[system] You are an airline agent.")
    assert (
        '[tool] lookup_flight(flight="LX318")\n[result] {"status": "delayed", "minutes": 95}\n'
        in text
    )
    assert last_agent_message(text) == (
        "LX318 is delayed by 95 minutes. I can rebook you on the next flight."
    )


def test_otel_tool_spans_alone_still_render():
    spans = load("otel_semconv.json")["spans"][:1]
    assert render("otel", spans) == (
        '[tool] lookup_flight(flight="LX318")\n[result] {"status": "delayed", "minutes": 95}\n'
    )


@pytest.mark.parametrize(
    "events",
    [
        [  # one event per message, as the OpenAI instrumentations recorded them
            {"name": "gen_ai.user.message", "attributes": {"content": "Refund order 7."}},
            {"name": "gen_ai.choice", "attributes": {"message": '{"content": "Refunded."}'}},
        ],
        [  # the operation-details event of the current conventions
            {
                "name": "gen_ai.client.inference.operation.details",
                "attributes": [
                    {
                        "key": "gen_ai.input.messages",
                        "value": {
                            "stringValue": '[{"role": "user", "content": "Refund order 7."}]'
                        },
                    },
                    {
                        "key": "gen_ai.output.messages",
                        "value": {"stringValue": '[{"role": "assistant", "content": "Refunded."}]'},
                    },
                ],
            }
        ],
        [  # OpenLLMetry's content events
            {
                "name": "gen_ai.content.prompt",
                "attributes": {"gen_ai.prompt": '[{"role": "user", "content": "Refund order 7."}]'},
            },
            {
                "name": "gen_ai.content.completion",
                "attributes": {
                    "gen_ai.completion": '[{"role": "assistant", "content": "Refunded."}]'
                },
            },
        ],
    ],
)
def test_otel_gen_ai_span_events_render_as_the_conversation(events):
    span = {"startTimeUnixNano": "1", "attributes": {"gen_ai.operation.name": "chat"}}
    data = {"spans": [{**span, "events": events}]}
    assert detect_kind(data) == "otel"
    assert render("otel", data) == "[user] Refund order 7.\n[assistant] Refunded.\n"


def test_unrecognised_input_lists_the_formats():
    with pytest.raises(ContractEvalError) as info:
        detect_kind({"colour": "red"})
    assert "OpenTelemetry GenAI spans" in str(info.value) and "τ-bench results" in str(info.value)


def test_every_input_kind_is_one_declared_format_tried_in_detection_but_text() -> None:
    from matching.importers import DETECTION_ORDER, FORMATS, INPUT_KINDS

    assert tuple(FORMATS) == INPUT_KINDS
    assert sorted(f.name for f in DETECTION_ORDER) == sorted(set(INPUT_KINDS) - {"text"})
    assert all(FORMATS[f.name] is f for f in DETECTION_ORDER)
