"""Conformance review against the spec: edge cases the other engine tests leave out.

Each test names the behaviour and cites the clause of ``../shared/spec/`` it checks.
"""

from __future__ import annotations

from typing import Any

from matching.conditioning import condition
from matching.evaluate import agent_text, evaluate_detailed
from matching.formats import read_case, read_observed
from matching.perturb import perturb_case
from matching.suite import CaseResult, score
from matching.validate import load_contract

from .helpers import make_contract


def _observed(lines: list[tuple[str, str, str | None]], **extra: Any) -> dict[str, Any]:
    """A trace whose nodes ``(id, line, gold)`` each quote one whole line, in step order."""
    nodes, pos = [], 0
    for step, (oid, line, gold) in enumerate(lines):
        label = line.split("] ", 1)[-1]
        span = {"start": pos, "end": pos + len(line)}
        nodes.append({"id": oid, "label": label, "evidence": [span], "step": step, "gold": gold})
        pos += len(line) + 1
    text = "\n".join(line for _, line, _ in lines) + "\n"
    return {
        "format": "contracteval.observed/v1",
        "source": {"kind": "trace", "text": text},
        "nodes": nodes,
        **extra,
    }


def _failures(contract: dict[str, Any], obs: dict[str, Any], mode: str) -> list[tuple[str, str]]:
    c = load_contract(contract)
    ev = evaluate_detailed(condition(c, {"id": "q"}), read_observed(obs), mode=mode)
    return [(f["family"], f["location"]) for f in ev.failures]


# ALGORITHMS.md §2, token mode: "Tool binding: when e's `meta.tool` names a tool and o's
# evidence is a call of that tool (a span whose text, after an optional `[tool] ` tag,
# starts with `name(`), sim(e, o) = 1.0." -- any tool name, not only identifier-like ones.
def test_meta_tool_binds_a_call_whose_tool_name_is_not_an_identifier() -> None:
    contract = make_contract(
        [
            {"id": "goal", "type": "intent"},
            {"id": "fetch", "parent": "goal", "label": "Fetch record", "meta": {"tool": "crm:get"}},
        ]
    )
    obs = _observed([("o1", "[tool] crm:get(id=7)", None)])
    assert _failures(contract, obs, "token") == []


# ALGORITHMS.md §3.5: the agent text of a trace is its [assistant] and [tool] events "each
# whole (tag and continuation lines included)"; a blank line inside a message is rendered
# as a continuation line of two spaces (FORMAT.md §4) and is part of the event.
def test_agent_text_keeps_a_blank_continuation_line_of_an_assistant_event() -> None:
    obs = read_observed(
        {
            "format": "contracteval.observed/v1",
            "source": {"kind": "trace", "text": "[assistant] Card:\n  \n  4111\n[user] ok\n"},
            "nodes": [],
        }
    )
    assert agent_text(obs) == "[assistant] Card:\n  \n  4111"


# ALGORITHMS.md §6: balanced detection accuracy = (mean of the per-family detection rates
# + clean specificity) / 2 -- of the rates themselves, not of their 6-decimal roundings.
def test_balanced_accuracy_is_computed_from_unrounded_rates() -> None:
    results = [CaseResult("c1", True, None, None, "clean", [])]
    results += [CaseResult(f"c{i}", True, None, None, "non_clean", []) for i in (2, 3)]
    results.append(CaseResult("p1", False, "omission", "x", "clean", []))
    # specificity 1/3, omission detection 0: (0 + 1/3) / 2 = 1/6 = 0.1666666...
    assert score(results)["balanced_detection_accuracy"] == 0.166667


# ALGORITHMS.md §5, wrong_branch: insert "one node for B' and one for each required node
# below it (nested decisions take their first declared outcome)" -- a required first
# outcome of a nested decision is a required node below B' and gets its node too.
def test_wrong_branch_inserts_a_required_first_outcome_of_a_nested_decision() -> None:
    contract = load_contract(
        make_contract(
            [
                {"id": "goal", "type": "intent"},
                {"id": "gate", "type": "decision", "parent": "goal"},
                {"id": "yes", "type": "branch_condition", "parent": "gate", "required": False},
                {"id": "do_yes", "parent": "yes"},
                {"id": "no", "type": "branch_condition", "parent": "gate", "required": False},
                {"id": "inner", "type": "decision", "parent": "no"},
                {"id": "in_a", "type": "branch_condition", "parent": "inner"},
                {"id": "do_a", "parent": "in_a"},
                {"id": "in_b", "type": "branch_condition", "parent": "inner"},
                {"id": "do_b", "parent": "in_b"},
            ],
            edges=[
                {"source": "gate", "target": "yes", "kind": "branches_to"},
                {"source": "gate", "target": "no", "kind": "branches_to"},
                {"source": "inner", "target": "in_a", "kind": "branches_to"},
                {"source": "inner", "target": "in_b", "kind": "branches_to"},
            ],
            queries=[{"id": "q", "branches": {"gate": "yes"}}],
        )
    )
    obs = _observed(
        [("o1", "[assistant] Decided the gate.", "gate"), ("o2", "[assistant] Did yes.", "do_yes")]
    )
    case = read_case(
        {
            "format": "contracteval.case/v1",
            "id": "crafted/q",
            "contract": "crafted",
            "query": "q",
            "observed": obs,
            "label": {"clean": True},
        }
    )
    made = perturb_case(contract, case, "wrong_branch")
    assert made is not None
    assert [n.gold for n in made.observed.nodes] == ["gate", "no", "inner", "in_a", "do_a"]
