"""The CI gate: ``contracteval check`` over files, folders and τ-bench results files,
its exit status by policy, JUnit XML that a JUnit parser reads, the Markdown summary,
and ``assert_follows`` for an agent's own tests."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from matching.cli import main
from matching.cli_check import POLICY_FAILED
from matching.gate import Checked, assert_follows, check_paths, gated, markdown

from .helpers import DATA, refund_observed_doc

CONTRACT = DATA / "refund-mini.json"
# the refund is issued without looking the order up or checking who owns it
SKIPPED_CHECKS = """[user] Hi, I'd like a refund for order 1042 please, it arrived ten days ago.
[tool] issue_refund(order_id="1042", amount=59.00, to="original_payment")
[result] {"refund_id": "RF-88", "status": "approved"}
[assistant] Done: your refund of $59.00 is on its way.
"""


CLEAN = json.dumps(refund_observed_doc())  # the gold observed graph of q1
SKIPPED = json.dumps(
    {
        **refund_observed_doc(),
        "nodes": [n for n in refund_observed_doc()["nodes"] if n.get("gold") != "verify_owner"],
    }
)


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "clean.json").write_text(CLEAN, encoding="utf-8")
    (folder / "skipped.json").write_text(SKIPPED, encoding="utf-8")
    (folder / ".hidden.txt").write_text("not a trace", encoding="utf-8")
    return folder


def _check(args: list[str]) -> int:
    return main(["check", str(CONTRACT), "--query", "q1", *args])  # token mode: CLI.md's default


def test_a_folder_fails_the_gate_when_one_trace_breaks_the_contract(traces, tmp_path, capsys):
    junit, summary = tmp_path / "out.xml", tmp_path / "summary.md"
    code = _check([str(traces), "--junit", str(junit), "--summary", str(summary)])
    assert code == POLICY_FAILED
    report = JUnitXml.fromfile(str(junit))
    cases = {case.name: case for suite in report for case in suite}
    assert set(cases) == {str(traces / "clean.json"), str(traces / "skipped.json")}
    failed = cases[str(traces / "skipped.json")]
    assert [type(r) for r in failed.result] == [Failure]
    assert "omission" in failed.result[0].text and failed.result[0].type == "violation"
    assert not cases[str(traces / "clean.json")].result
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["policy"] == "violation" and result["passed"] is False
    verdicts = {t["name"]: t["verdict"] for t in result["traces"]}
    assert verdicts == {
        str(traces / "clean.json"): "clean",
        str(traces / "skipped.json"): "violation",
    }
    assert "check failed: 1 of 2 traces fail on violation" in err
    assert "failed (1 of 2 traces fail on violation)" in summary.read_text()


def test_a_folder_of_clean_traces_passes(traces):
    (traces / "skipped.json").unlink()
    assert _check([str(traces)]) == 0


def test_semantic_mode_reads_needs_review_and_the_policy_decides(traces):
    (traces / "pasted.txt").write_text(SKIPPED_CHECKS, encoding="utf-8")
    checked = check_paths(_contract(), "q1", [traces])
    assert {c.verdict for c in checked} <= {"clean", "needs_review", "violation"}
    assert all(c.p_violation is not None and 0 <= c.p_violation <= 1 for c in checked)
    names = {c.name for c in checked if c.verdict == "needs_review"}
    names |= {c.name for c in gated(checked, "violation")}
    assert {c.name for c in gated(checked, "needs-review")} == names


def test_each_trajectory_of_a_results_file_is_checked_against_its_own_query(tmp_path):
    def entry(task: int, words: str) -> dict:
        traj = [{"role": "user", "content": "Refund order 1042."},
                {"role": "assistant", "content": words}]  # fmt: skip
        return {"task_id": task, "trial": 0, "reward": 1.0, "info": {}, "traj": traj}

    results = tmp_path / "results.json"
    results.write_text(json.dumps([entry(1, "Refunded."), entry(2, "I refunded it.")]))
    contract = _contract()
    q1 = contract.queries[0]
    contract.queries += [dataclasses.replace(q1, id=f"t{k}") for k in (1, 2)]
    checked = check_paths(contract, "t{task_id}", [results], mode="token", extractor="heuristic")
    assert [c.name for c in checked] == [
        f"{results}#task_id=1,trial=0",
        f"{results}#task_id=2,trial=0",
    ]


def test_an_unreadable_trace_is_an_error_naming_its_file(tmp_path, capsys):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    assert _check([str(bad)]) == 1
    assert "broken.json" in capsys.readouterr().err


def test_the_summary_keeps_a_pipe_in_a_name_inside_its_cell():
    c = Checked("a|b", "q1", "violation", 0.99, [{"family": "omission", "detail": "x|y"}])
    row = markdown([c], "violation").splitlines()[-1]
    assert row.count(" | ") == 5 and "a\\|b" in row and "x\\|y" in row


def test_assert_follows_lists_the_failures_of_a_trace_that_breaks_the_contract():
    with pytest.raises(AssertionError, match="omission"):
        assert_follows(CONTRACT, SKIPPED_CHECKS, query="q1", mode="token", extractor="heuristic")
    clean = Path(__file__).parent / "clean.json"
    ok = assert_follows(CONTRACT, DATA / "refund-mini-observed-q1.json", query="q1", mode="token")
    assert ok.verdict == "clean" and not clean.exists()


def test_assert_follows_reads_openai_chat_messages():
    chat = [
        {"role": "user", "content": "Refund order 1042."},
        {"role": "assistant", "content": "I have refunded order 1042."},
    ]
    with pytest.raises(AssertionError, match="does not follow refund-mini q1"):
        assert_follows(CONTRACT, chat, query="q1", mode="token", extractor="heuristic")


def _contract():
    from matching.validate import load_contract

    return load_contract(CONTRACT)
