"""The tool catalogue: parsing an OpenAI tools list and suggesting meta.tool bindings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from matching.input_limits import InputRefused, Limits
from matching.tools import (
    NodeText,
    Tool,
    ToolCatalogueError,
    catalogue_document,
    parse_tools,
    suggest_bindings,
)

WRAPPED = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by its number",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "issueRefund", "description": "Refund a payment"}},
]


def test_parses_the_wrapped_openai_form():
    tools = parse_tools(json.dumps(WRAPPED))
    assert [t.name for t in tools] == ["get_order", "issueRefund"]
    assert tools[0].parameters["properties"]["order_id"] == {"type": "string"}
    assert tools[1].parameters == {}


def test_parses_the_bare_list_of_functions_and_a_tools_key():
    bare = [w["function"] for w in WRAPPED]
    assert parse_tools(bare) == parse_tools(WRAPPED)
    assert parse_tools({"tools": WRAPPED}) == parse_tools(WRAPPED)


def test_canonical_document_round_trips():
    tools = parse_tools(WRAPPED)
    doc = catalogue_document(tools)
    assert doc[1] == {
        "type": "function",
        "function": {"name": "issueRefund", "description": "Refund a payment", "parameters": {}},
    }
    assert parse_tools(doc) == tools


def test_name_words_split_snake_and_camel_case():
    assert Tool("issueRefund", "x").words == "issue Refund x"
    assert Tool("get-order_id").words == "get order id"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{not json", "not JSON"),
        ('{"a": 1}', "JSON array"),
        ('[{"description": "no name"}]', "tool 1: the 'name' is missing"),
        ('[{"name": "a"}, {"name": ""}]', "tool 2: the 'name' is missing"),
        ('[{"name": "has space"}]', "'has space' must be 1-64"),
        ('[{"name": "a"}, {"name": "a"}]', "'a' appears more than once"),
        ('[{"name": "a", "description": 3}]', "description must be a string"),
        ('[{"name": "a", "parameters": []}]', "parameters must be a JSON schema object"),
        ('[{"type": "code", "function": {"name": "a"}}]', "type must be 'function'"),
        ('["a"]', "must be an object"),
    ],
)
def test_rejects_bad_tools_lists_naming_the_problem(source, message):
    with pytest.raises(ToolCatalogueError) as err:
        parse_tools(source)
    assert message in err.value.message


TOOLS_BYTES = Limits().tools_bytes


def test_refuses_a_list_over_the_size_limit_before_parsing_it():
    big = json.dumps([{"name": "a", "description": "x" * TOOLS_BYTES}])
    with pytest.raises(InputRefused, match=r"the limit is 524,288 \(INPUT_LIMITS tools_bytes\)"):
        parse_tools(big + "not even JSON")
    assert parse_tools(big, limits=None)[0].name == "a"  # a stored catalogue is read as is


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ('[{"name": "a", "parameters": ' + '{"a": ' * 200 + "1" + "}" * 201 + "]", "deeper"),
        ('[{"name": "a\\u0000"}]', "NUL character"),
        (b'[{"name": "caf\xe9"}]', "not UTF-8 text"),
        (json.dumps([{"name": f"t{i}"} for i in range(129)]), "has 129 tools; the limit is 128"),
    ],
)
def test_refuses_lists_past_the_input_limits_naming_the_limit(source, message):
    with pytest.raises(InputRefused, match=message):
        parse_tools(source)


def test_suggests_the_best_tool_for_actions_and_validations_only():
    tools = parse_tools(WRAPPED)
    nodes = [
        NodeText("lookup", "action", "Look up the order", "Find the customer's order"),
        NodeText("refund", "action", "Issue a refund", ""),
        NodeText("check", "validation", "Check the order number", ""),
        NodeText("intent", "intent", "Look up the order", ""),
        NodeText("greet", "action", "Greet the caller warmly", ""),
    ]
    got = {s.node_id: (s.tool, s.score) for s in suggest_bindings(nodes, tools)}
    assert set(got) == {"lookup", "refund", "check"}
    assert got["lookup"][0] == "get_order"
    assert got["refund"][0] == "issueRefund"
    assert got["check"][0] == "get_order"
    assert all(0.35 <= score <= 1 for _, score in got.values())


def test_no_tools_or_no_bindable_nodes_give_no_suggestions():
    assert suggest_bindings([NodeText("a", "action", "x", "")], []) == []
    assert suggest_bindings([NodeText("a", "intent", "get order", "")], [Tool("get_order")]) == []


class _FakeEncoder:
    """Maps every text to a fixed direction chosen by a keyword, to test the blend."""

    def encode(self, texts):
        return np.array([[1.0, 0.0] if "pay" in t.lower() else [0.0, 1.0] for t in texts])


def test_an_encoder_blends_the_cosine_with_the_token_score():
    tools = [Tool("transfer_funds", "Pay a supplier")]
    node = [NodeText("p", "action", "Settle the invoice payment", "")]
    assert suggest_bindings(node, tools) == []
    got = suggest_bindings(node, tools, encoder=_FakeEncoder())
    assert [(s.tool, s.score) for s in got] == [("transfer_funds", 0.75)]


def test_refuses_a_parsed_list_over_the_size_limit():
    with pytest.raises(InputRefused, match="INPUT_LIMITS tools_bytes"):
        parse_tools([{"name": "a", "description": "x" * TOOLS_BYTES}])


class _LeaningEncoder:
    """Debts and payments are near (cosine 0.6); anything else is orthogonal to both."""

    def encode(self, texts):
        def vector(t: str) -> list[float]:
            if "owe" in t.lower():
                return [1.0, 0.0, 0.0]
            return [0.6, 0.8, 0.0] if "pay" in t.lower() else [0.0, 0.0, 1.0]

        return np.array([vector(t) for t in texts])


CATALOGUE = [
    Tool("find_account", "Find account."),
    Tool("close_account", "Close account."),
    Tool("send_payment", "Send payment."),
]


def test_semantic_suggestions_need_the_higher_measured_threshold():
    node = [NodeText("settle", "action", "Settle what the customer owes", "")]
    # cosine 0.6, no shared token: the blend is 0.45, under the semantic threshold
    assert suggest_bindings(node, CATALOGUE, encoder=_LeaningEncoder()) == []
    got = suggest_bindings(node, CATALOGUE, encoder=_LeaningEncoder(), threshold=0.35)
    assert [(s.tool, s.score) for s in got] == [("send_payment", 0.45)]


def test_token_suggestions_keep_the_candidate_threshold():
    # "close the account" is close_account's own words; the signature check shares only
    # "account" with it, for a score of 1/3
    nodes = [
        NodeText("close", "action", "Close the account", ""),
        NodeText("weak", "validation", "Stamp the account holder's signature on file", ""),
    ]
    got = {s.node_id: (s.tool, s.score) for s in suggest_bindings(nodes, CATALOGUE)}
    assert got == {"close": ("close_account", 1.0)}
    loose = suggest_bindings(nodes, CATALOGUE, threshold=0.2)
    assert {s.node_id: s.tool for s in loose} == {"close": "close_account", "weak": "find_account"}


def test_a_tie_goes_to_the_tool_declared_first():
    nodes = [NodeText("acct", "action", "Account", "")]
    assert [s.tool for s in suggest_bindings(nodes, CATALOGUE)] == ["find_account"]
    reordered = [CATALOGUE[1], CATALOGUE[0], CATALOGUE[2]]
    assert [s.tool for s in suggest_bindings(nodes, reordered)] == ["close_account"]
