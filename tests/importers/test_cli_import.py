"""``contracteval import`` and ``extract --source`` on JSON exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matching.cli import main
from matching.formats import read_observed

SAMPLES = Path(__file__).parent / "samples"


def test_import_writes_an_observed_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "observed.json"
    assert main(["import", str(SAMPLES / "anthropic.json"), "--out", str(out)]) == 0
    obs = read_observed(out)
    assert obs.kind == "trace" and obs.nodes == []
    assert obs.text.startswith("[system] You are the claims assistant")
    assert obs.output == (
        "Your policy covers theft. To open the claim I need the police crime reference number."
    )
    assert "imported anthropic" in capsys.readouterr().err


def test_import_results_file_needs_select(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    src = str(SAMPLES / "tau_results.json")
    out = tmp_path / "o.json"
    assert main(["import", src, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the file holds 3 trajectories" in err
    assert "task_id=0,trial=1 (reward 0.0)" in err and not out.exists()
    assert main(["import", src, "--select", "task_id=0,trial=1", "--out", str(out)]) == 0
    assert read_observed(out).output == "Sorry, I could not find a return option for that order."


def test_import_lists_trajectories(capsys: pytest.CaptureFixture[str]):
    assert main(["import", str(SAMPLES / "tau_results.json"), "--list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(t["task_id"], t["trial"]) for t in listed] == [(0, 0), (0, 1), (4, 0)]


def test_import_can_write_the_rendered_trace(tmp_path: Path):
    out = tmp_path / "trace.txt"
    args = ["import", str(SAMPLES / "otel_semconv.json"), "--write", "trace", "--out", str(out)]
    assert main(args) == 0
    assert out.read_text().startswith("[system] You are an airline agent.")


def test_import_refuses_reference_actions_and_a_wrong_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = str(tmp_path / "o.json")
    assert main(["import", str(SAMPLES / "tau_task.json"), "--out", out]) == 1
    assert "reference solution" in capsys.readouterr().err
    assert main(["import", str(SAMPLES / "anthropic.json"), "--format", "otel", "--out", out]) == 1
    assert "no span carries gen_ai messages" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('[{"role": "user", "content": "Hi"')
    assert main(["import", str(broken), "--out", out]) == 1
    assert "looks like JSON but is not valid JSON" in capsys.readouterr().err
    assert main(["import", str(SAMPLES / "anthropic.json")]) == 2  # no --out


def test_extract_reads_json_sources_through_the_importers(capsys: pytest.CaptureFixture[str]):
    assert main(["extract", "--source", str(SAMPLES / "openai_legacy.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["text"].startswith("[system] You are the support agent of Tallis Rail.")
    quotes = [n["evidence"][0]["quote"] for n in doc["nodes"]]
    assert 'get_booking(booking_ref="TR-88")' in " ".join(quotes)
    assert doc["output"].startswith("I can't refund a booking")
    args = ["extract", "--source", str(SAMPLES / "tau_results.json"), "--select", "task_id=4"]
    assert main(args) == 0
    assert "#W9034" in json.loads(capsys.readouterr().out)["source"]["text"]


def test_import_holds_a_file_to_the_engine_default_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = str(tmp_path / "o.json")
    big = tmp_path / "big.txt"
    big.write_text("[user] refund please\n" * 250_000)  # 5.25 MB: over upload_bytes
    assert main(["import", str(big), "--out", out]) == 1
    err = capsys.readouterr().err
    assert "big.txt" in err and "is 5,250,000 bytes; the limit is 4,194,304" in err
    assert "(INPUT_LIMITS upload_bytes)" in err
    long = tmp_path / "long.txt"
    long.write_text("[user] refund please\n" * 30_000)  # 630 kB: read, then over trace_bytes
    assert main(["import", str(long), "--out", out]) == 1
    assert "the limit is 524,288 (INPUT_LIMITS trace_bytes)" in capsys.readouterr().err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100 + "]" * 100)
    assert main(["import", str(deep), "--out", out]) == 1
    assert "nested deeper than 64 levels" in capsys.readouterr().err
    assert not Path(out).exists()


@pytest.mark.parametrize(
    "sample", ["openai_legacy.json", "openai_responses.json", "anthropic.json", "otel_semconv.json"]
)
def test_an_upload_and_contracteval_import_read_the_same_final_output(sample: str):
    """One rule for both paths: the last agent message of the rendered trace (the
    OpenAI sample ends with a refusal, which only the renderer reads)."""
    from matching.importers.load import load_trace
    from matching.uploads import prepare_input

    path = SAMPLES / sample
    imported = load_trace(path)
    uploaded = prepare_input(
        kind="auto", data=path.read_text(), contract_key="c", query_key="q", mode="token"
    )
    assert uploaded.observed.get("output") == imported.output
    if sample == "openai_legacy.json":
        assert imported.output.startswith("I can't refund a booking")
