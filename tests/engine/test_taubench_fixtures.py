"""The τ-bench airline development set (fixtures/taubench): the audited contract, its
queries and the rendered traces stay consistent with the shared data they come from.

The data lives outside the repository, in ``../shared/data/taubench-airline-dev`` (or
beside a folder further up, for a git worktree); it is always present, so nothing here
is skipped. Only an entry's ``task_id``, ``trial`` and ``traj`` are read: ``reward`` and
``info`` (the outcome check and the task's reference solution) are not labels.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from matching.conditioning import condition
from matching.importers import detect_kind, render
from matching.importers.load import load_trace
from matching.tools import parse_tools
from matching.validate import audit_contract, load_contract

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "taubench"
CONTRACT_PATH = FIXTURES / "contracts" / "airline.json"
DATASET = Path("shared") / "data" / "taubench-airline-dev"


def data_dir() -> Path:
    for folder in ROOT.parents:
        if (folder / DATASET / "results.json").is_file():
            return folder / DATASET
    raise AssertionError(f"the shared data set {DATASET} is missing beside {ROOT}")


DATA = data_dir()


@cache
def results() -> list[dict[str, Any]]:
    return json.loads((DATA / "results.json").read_text(encoding="utf-8"))


@cache
def contract_doc() -> dict[str, Any]:
    return json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))


def entries() -> list[tuple[int, int]]:
    return sorted((e["task_id"], e["trial"]) for e in results())


def test_the_contract_validates_without_errors_or_warnings() -> None:
    audit = audit_contract(contract_doc())
    assert audit.errors == []
    assert audit.warnings == []


def test_the_artifact_is_the_policy_verbatim_and_the_licence_is_copied() -> None:
    assert contract_doc()["artifact"]["text"] == (DATA / "policy.md").read_text(encoding="utf-8")
    assert (FIXTURES / "LICENSE").read_bytes() == (DATA / "LICENSE").read_bytes()


def test_every_tool_binding_names_a_tool_of_the_catalogue() -> None:
    tools = {t.name for t in parse_tools((DATA / "tools.json").read_text(encoding="utf-8"))}
    bound = []
    for node in contract_doc()["nodes"]:
        names = node["meta"].get("tool", [])
        bound += [names] if isinstance(names, str) else names
    assert bound and set(bound) <= tools


def test_no_node_carries_an_enactment() -> None:
    assert not [n["id"] for n in contract_doc()["nodes"] if "enactment" in n["meta"]]


def test_there_is_one_query_per_task_opening_with_the_first_user_turn() -> None:
    first = {
        e["task_id"]: next(m["content"] for m in e["traj"] if m["role"] == "user")
        for e in results()
        if e["trial"] == 0
    }
    queries = {q["id"]: q["text"] for q in contract_doc()["queries"]}
    assert queries == {f"t{task}": text for task, text in first.items()}


@pytest.mark.parametrize("query", contract_doc()["queries"], ids=lambda q: q["id"])
def test_every_query_conditions_and_names_only_active_decisions(query: dict[str, Any]) -> None:
    expected = condition(load_contract(CONTRACT_PATH), query["id"])
    assert set(query["intents"]) <= set(expected.nodes)
    assert expected.decisions == query["branches"]


def test_every_trace_is_what_the_importer_renders_today() -> None:
    data = results()
    kind = detect_kind(data)
    assert kind == "tau_bench_results"
    traces = FIXTURES / "traces"
    names = set()
    for task, trial in entries():
        name = f"task{task}-trial{trial}.txt"
        names.add(name)
        rendered = render(kind, data, select={"task_id": str(task), "trial": str(trial)})
        assert (traces / name).read_bytes() == rendered.encode("utf-8"), name
    assert {p.name for p in traces.glob("*.txt")} == names
    assert len(names) == 148


def test_the_command_line_import_path_renders_the_same_text() -> None:
    # The CLI's `import --write trace` writes load_trace(...).text: one entry suffices to
    # show the fixtures' renderer is that path's.
    task, trial = entries()[-1]
    src = load_trace(DATA / "results.json", "auto", {"task_id": str(task), "trial": str(trial)})
    assert src.kind == "tau_bench_results"
    assert src.text == (FIXTURES / "traces" / f"task{task}-trial{trial}.txt").read_text("utf-8")
