"""The `contracteval` command behaves as CLI.md says: outputs, exit codes, one-line errors."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matching.cli import main
from matching.formats import read_case, read_expected, read_observed, read_report

DATA = Path(__file__).resolve().parents[2] / "matching" / "data"
CONTRACT = DATA / "refund-mini.json"
OBSERVED = DATA / "refund-mini-observed-q1.json"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, doc) -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def one_line_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def contract_doc():
    return json.loads(CONTRACT.read_text())


@pytest.fixture
def suite_dir(tmp_path):
    folder = tmp_path / "suite"
    (folder / "contracts").mkdir(parents=True)
    shutil.copy(CONTRACT, folder / "contracts" / "refund-mini.json")
    observed = json.loads(OBSERVED.read_text())
    case = {
        "format": "contracteval.case/v1",
        "id": "refund-mini/q1/clean",
        "contract": "refund-mini",
        "query": "q1",
        "observed": observed,
        "label": {"clean": True},
    }
    (folder / "cases.jsonl").write_text(json.dumps(case) + "\n")
    return folder


def test_validate_prints_readable_lines_and_exits_zero(capsys):
    code, out, _ = run(capsys, "validate", str(CONTRACT))
    assert code == 0
    assert "0 error(s), 0 warning(s)" in out
    assert "evidence coverage: 90.0% (9 of 10 non-blank lines)" in out


def test_validate_json_reports_errors_and_exits_one(capsys, tmp_path, contract_doc):
    contract_doc["nodes"][1]["parent"] = "ghost"
    code, out, _ = run(capsys, "validate", str(write(tmp_path, "c.json", contract_doc)), "--json")
    assert code == 1
    audit = json.loads(out)
    assert audit["ok"] is False
    assert [(e["rule"], e["node"]) for e in audit["errors"]] == [("unknown-parent", "lookup_order")]


def test_condition_prints_the_expected_graph_of_an_embedded_query(capsys):
    code, out, _ = run(capsys, "condition", str(CONTRACT), "--query", "q1")
    assert code == 0
    expected = read_expected(out)
    assert expected["pruned"] == ["outside_window", "decline_refund", "offer_credit"]
    assert expected["decisions"] == {"check_window": "within_window"}


def test_condition_reads_a_query_document_when_the_file_exists(capsys, tmp_path):
    query = {
        "format": "contracteval.query/v1",
        "id": "q9",
        "text": "Old order, refund?",
        "branches": {"check_window": "outside_window"},
    }
    code, out, _ = run(
        capsys, "condition", str(CONTRACT), "--query", str(write(tmp_path, "q.json", query))
    )
    assert code == 0
    assert json.loads(out)["query"] == "q9"


@pytest.mark.parametrize("mode", ["oracle", "token"])
def test_match_reports_the_clean_example_clean(capsys, mode):
    code, out, _ = run(
        capsys, "match", str(CONTRACT), "--query", "q1", "--observed", str(OBSERVED), "--mode", mode
    )
    assert code == 0
    report = read_report(out)
    assert report["verdict"] == "clean"
    assert set(report["metrics"].values()) == {1.0}


def test_match_of_many_observed_files_prints_one_json_line_each_in_order(capsys, tmp_path):
    broken = json.loads(OBSERVED.read_text())
    broken["output"] = '{"order_id": "1042"}'
    files = [str(OBSERVED), str(write(tmp_path, "o.json", broken)), str(OBSERVED)]
    code, out, err = run(capsys, "match", str(CONTRACT), "--query", "q1", "--observed", *files)
    assert code == 0
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["observed"] for x in lines] == files
    assert [x["report"]["verdict"] for x in lines] == ["clean", "non_clean", "clean"]
    for x, path in zip(lines, files, strict=True):
        _, single, _ = run(capsys, "match", str(CONTRACT), "--query", "q1", "--observed", path)
        assert x["report"] == read_report(single)  # the same report as one file at a time
    assert "traces: 3/3 (100%)" in err


def test_match_of_many_files_with_one_invalid_prints_nothing_and_names_it(capsys, tmp_path):
    bad = write(tmp_path, "bad.json", {"format": "contracteval.observed/v1", "nodes": "x"})
    code, out, err = run(
        capsys, "match", str(CONTRACT), "--query", "q1", "--observed", str(OBSERVED), str(bad)
    )
    assert code == 1 and out == ""
    assert "bad.json" in one_line_error(err)


def test_match_exits_zero_on_a_non_clean_verdict(capsys, tmp_path):
    observed = json.loads(OBSERVED.read_text())
    observed["output"] = '{"order_id": "1042"}'
    code, out, _ = run(
        capsys,
        "match",
        str(CONTRACT),
        "--query",
        "q1",
        "--observed",
        str(write(tmp_path, "o.json", observed)),
    )
    assert code == 0
    failures = json.loads(out)["failures"]
    assert [(f["family"], f["location"]) for f in failures] == [("output_contract", "reply_json")]


def test_match_with_an_extractor_re_extracts_from_the_source_text(capsys):
    code, out, _ = run(
        capsys,
        "match",
        str(CONTRACT),
        "--query",
        "q1",
        "--observed",
        str(OBSERVED),
        "--extractor",
        "heuristic",
    )
    assert code == 0
    report = json.loads(out)
    # the gold node o1 is "Looked up the order"; re-extracted, it is the bare tool call
    details = " ".join(f["detail"] for f in report["failures"])
    assert "Called lookup_order" in details


def test_oracle_mode_with_an_extractor_is_a_usage_error(capsys):
    code, _, err = run(
        capsys,
        "match",
        str(CONTRACT),
        "--query",
        "q1",
        "--observed",
        str(OBSERVED),
        "--mode",
        "oracle",
        "--extractor",
        "heuristic",
    )
    assert code == 2
    assert "usage error" in err and "--extractor none" in err


def test_a_missing_required_argument_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["condition", str(CONTRACT)])
    assert exc.value.code == 2


def test_extract_prints_an_observed_graph_with_exact_evidence(capsys, tmp_path):
    text = json.loads(OBSERVED.read_text())["source"]["text"]
    source = write(tmp_path, "trace.txt", text)
    code, out, _ = run(
        capsys, "extract", "--source", str(source), "--contract", str(CONTRACT), "--query", "q1"
    )
    assert code == 0
    obs = read_observed(out)
    assert (obs.contract, obs.query, obs.kind) == ("refund-mini", "q1", "trace")
    assert obs.nodes and all(
        obs.text[s.start : s.end] == s.quote for n in obs.nodes for s in n.evidence
    )
    assert all(n.gold is None for n in obs.nodes)


def test_extract_llm_without_a_key_warns_and_uses_the_heuristic(capsys, tmp_path, monkeypatch):
    for var in ("CONTRACTEVAL_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    source = write(tmp_path, "r.txt", "I have approved your refund for order 1042.")
    code, out, err = run(
        capsys, "extract", "--source", str(source), "--kind", "response", "--extractor", "llm"
    )
    assert code == 0
    assert "warning" in err and "heuristic" in err
    assert len(read_observed(out).nodes) == 1


def test_perturb_writes_the_clean_case_and_one_case_per_family(capsys, tmp_path, suite_dir):
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "perturb", str(suite_dir), "--out", str(out_dir), "--seed", "3")
    assert code == 0
    summary = json.loads(out)
    assert summary["clean"] == 1 and summary["cases"] == 7
    assert all(v == {"made": 1, "skipped": 0} for v in summary["families"].values())
    lines = (out_dir / "cases.jsonl").read_text().splitlines()
    ids = [read_case(line).id for line in lines]
    assert ids[0] == "refund-mini/q1/clean"
    assert ids[1:] == [
        f"refund-mini/q1/{f}-1"
        for f in (
            "omission",
            "wrong_branch",
            "ordering",
            "extra_action",
            "invariant_violation",
            "output_contract",
        )
    ]
    assert (out_dir / "contracts" / "refund-mini.json").exists()


def test_perturb_is_deterministic_for_a_seed(capsys, tmp_path, suite_dir):
    for name in ("a", "b"):
        assert run(capsys, "perturb", str(suite_dir), "--out", str(tmp_path / name))[0] == 0
    assert (tmp_path / "a" / "cases.jsonl").read_text() == (
        tmp_path / "b" / "cases.jsonl"
    ).read_text()


def test_perturb_rejects_an_unknown_family(capsys, tmp_path, suite_dir):
    code, _, err = run(
        capsys, "perturb", str(suite_dir), "--out", str(tmp_path / "o"), "--families", "typo"
    )
    assert code == 2
    assert "typo" in err


def test_suite_prints_the_family_table_and_writes_json(capsys, tmp_path, suite_dir):
    out_dir = tmp_path / "out"
    assert run(capsys, "perturb", str(suite_dir), "--out", str(out_dir))[0] == 0
    report = tmp_path / "scores.json"
    code, out, err = run(
        capsys, "suite", str(out_dir), "--mode", "oracle", "--json", str(report), "--jobs", "2"
    )
    assert code == 0
    assert "omission" in out and "balanced detection accuracy: 1.000" in out
    assert "suite (oracle)" in err  # the progress bar
    scores = json.loads(report.read_text())
    assert scores["cases"] == 7 and scores["mode"] == "oracle" and scores["extractor"] == "none"
    assert scores["detection_accuracy"] == scores["localization"] == 1.0
    assert scores["per_family"]["ordering"] == {
        "cases": 1,
        "detection": 1.0,
        "localization": 1.0,
        "exact_localization": 1.0,
    }


def _broken(contract_doc, how: str):
    doc = copy.deepcopy(contract_doc)
    if how == "span":
        doc["nodes"][2]["evidence"][0]["end"] = 10_000
    elif how == "quote":
        doc["nodes"][2]["evidence"][0]["quote"] = "something else"
    elif how == "unknown id":
        doc["edges"][0]["source"] = "nowhere"
    elif how == "parent cycle":
        doc["nodes"][0]["parent"] = "confirm_outcome"
    elif how == "order cycle":
        doc["edges"].append(
            {"source": "verify_owner", "target": "lookup_order", "kind": "requires"}
        )
    elif how == "unresolved decision":
        doc["queries"][0]["branches"] = {}
    elif how == "wrong format":
        doc["format"] = "contracteval.query/v1"
    elif how == "unknown key":
        doc["nodes"][0]["colour"] = "red"
    return doc


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("span", "outside the text"),
        ("quote", "differs from the text"),
        ("unknown id", "'nowhere'"),
        ("parent cycle", "cycle"),
        ("order cycle", "cycle"),
        ("unresolved decision", "does not resolve active decision 'check_window'"),
        ("wrong format", "wrong format"),
        ("unknown key", "colour"),
    ],
)
def test_bad_contracts_end_with_exit_one_and_a_one_line_message(
    capsys, tmp_path, contract_doc, how, says
):
    path = write(tmp_path, "bad.json", _broken(contract_doc, how))
    code, out, err = run(capsys, "condition", str(path), "--query", "q1")
    assert code == 1 and out == ""
    line = one_line_error(err)
    assert line.startswith(f"contracteval: error: {path}: $")
    assert says in line


def test_a_file_that_is_not_json_is_named_in_the_error(capsys, tmp_path):
    path = write(tmp_path, "bad.json", '{"format": ')
    code, _, err = run(capsys, "validate", str(path))
    assert code == 1
    assert f"{path}: $: not JSON" in one_line_error(err)


def test_a_missing_file_is_named_in_the_error(capsys, tmp_path):
    code, _, err = run(
        capsys, "match", str(CONTRACT), "--query", "q1", "--observed", str(tmp_path / "nope.json")
    )
    assert code == 1
    assert "nope.json" in one_line_error(err) and "cannot read file" in err


def test_an_unknown_query_id_names_the_contract_file(capsys):
    code, _, err = run(capsys, "condition", str(CONTRACT), "--query", "q404")
    assert code == 1
    line = one_line_error(err)
    assert str(CONTRACT) in line and "no query 'q404'" in line


def test_an_observed_document_with_a_bad_step_is_invalid_input(capsys, tmp_path):
    observed = json.loads(OBSERVED.read_text())
    del observed["nodes"][2]["step"]
    path = write(tmp_path, "o.json", observed)
    code, _, err = run(capsys, "match", str(CONTRACT), "--query", "q1", "--observed", str(path))
    assert code == 1
    assert "$.nodes[2]" in one_line_error(err) and "[step]" in err


def test_the_console_script_is_installed():
    exe = Path(sys.executable).with_name("contracteval")
    result = subprocess.run(
        [str(exe), "validate", str(CONTRACT)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "0 error(s)" in result.stdout


def test_bench_passes_its_own_options_through(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--help"])
    assert exc.value.code == 0
    assert "--quick" in capsys.readouterr().out
