"""Robustness variants rewrite how a trace is written, never what it shows: every span
still quotes its words, labels stay, and every variant case reads back as valid."""

from __future__ import annotations

import json
import random
import shutil
from functools import cache
from pathlib import Path

import pytest

from matching.cli import main
from matching.extract import sentence_spans
from matching.formats import read_case
from matching.model import Case, Observed, ObservedNode, Span
from matching.perturb.rewrite import words
from matching.perturb.variants import KINDS, Stats, make_variant, merged, variant_cases
from matching.suite import load_suite
from matching.trace import events

SUITE = Path(__file__).resolve().parents[2] / "fixtures" / "suite"


@cache
def _suite_cases() -> tuple[Case, ...]:
    return tuple(load_suite(SUITE).cases)


@cache
def _sample() -> tuple[Case, ...]:
    """A seeded sample of 200 of the suite's 1,400 cases."""
    return tuple(random.Random(0).sample(list(_suite_cases()), 200))


@cache
def _variants(kind: str) -> tuple[tuple[Case, ...], Stats]:
    cases, stats = variant_cases(_sample(), kind, seed=0)
    return tuple(cases), stats


def _case(text: str, spans: list[tuple[int, int]], kind: str = "trace") -> Case:
    nodes = [
        ObservedNode(f"o{i + 1}", f"n{i + 1}", [Span(a, b, text[a:b])], i)
        for i, (a, b) in enumerate(spans)
    ]
    return Case("c/q/clean", "c", "q", Observed(kind, text, nodes, output="{}"), True)


def _span_of(text: str, part: str) -> tuple[int, int]:
    at = text.index(part)
    return at, at + len(part)


def _result_bodies(text: str) -> list[str]:
    """The text of each ``[result]`` event, tag and continuation indent removed."""
    out = []
    for e in events(text):
        if e.role == "result":
            lines = text[e.start + e.tag_length : e.end].split("\n")
            out.append("\n".join([lines[0], *(x.removeprefix("  ") for x in lines[1:])]))
    return out


TRACE = (
    "[user] I want a refund for order 7.\n"
    "[assistant] I have checked the order. It is inside the window.\n"
    "[assistant] I cannot refund the shipping, unfortunately.\n"
    '[tool] refund(order_id="7", amount=9.5)\n'
    "[assistant] Thanks for reaching out. The refund is on its way.\n"
)


def test_merged_joins_consecutive_assistant_lines_and_keeps_quotes():
    parts = [
        "[assistant] I have checked the order. It is inside the window.",
        "[assistant] I cannot refund the shipping, unfortunately.",
        '[tool] refund(order_id="7", amount=9.5)',
    ]
    case = _case(TRACE, [_span_of(TRACE, p) for p in parts])
    stats = Stats()
    new = merged(case, stats=stats)
    lines = new.observed.text.splitlines()
    assert lines[1] == (
        "[assistant] I have checked the order. It is inside the window."
        " I cannot refund the shipping, unfortunately."
    )
    assert stats.lines_merged == 1 and stats.nodes_dropped == 0
    quotes = [n.evidence[0].quote for n in new.observed.nodes]
    assert quotes == [parts[0], "I cannot refund the shipping, unfortunately.", parts[2]]
    assert [n.step for n in new.observed.nodes] == [0, 0, 1]


def test_merged_leaves_no_two_assistant_lines_in_a_row():
    for case in _variants("merged")[0]:
        roles = [e.role for e in events(case.observed.text)]
        assert ("assistant", "assistant") not in zip(roles, roles[1:], strict=False), case.id


def test_split_gives_each_sentence_its_own_line_and_keeps_the_order():
    text = TRACE
    whole = "[assistant] I have checked the order. It is inside the window."
    case = _case(text, [_span_of(text, whole), _span_of(text, "The refund is on its way.")])
    new = make_variant(case, "split")
    assert new.observed.text.splitlines()[1:3] == [
        "[assistant] I have checked the order.",
        "[assistant] It is inside the window.",
    ]
    first, last = new.observed.nodes
    assert [s.quote for s in first.evidence] == [
        "[assistant] I have checked the order.",
        "It is inside the window.",
    ]
    assert last.evidence[0].quote == "The refund is on its way."
    assert first.step < last.step
    for case in _variants("split")[0]:
        for e in events(case.observed.text):
            if e.role == "assistant":
                body = e.start + e.tag_length
                assert len(list(sentence_spans(case.observed.text[body : e.end], body))) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_spans_still_quote_their_words_after_each_variant(kind):
    cases, stats = _variants(kind)
    assert len(cases) == len(_sample())
    dropped = 0
    for old, new in zip(_sample(), cases, strict=True):
        text = new.observed.text
        by_id = {n.id: n for n in new.observed.nodes}
        dropped += len(old.observed.nodes) - len(by_id)
        for n in old.observed.nodes:
            if n.id not in by_id:
                continue
            spans = by_id[n.id].evidence
            assert all(s.quote == text[s.start : s.end] and s.start < s.end for s in spans)
            before = words("\n".join(old.observed.text[s.start : s.end] for s in n.evidence))
            after = words("\n".join(s.quote or "" for s in spans))
            if kind != "voice":
                assert after == before, (new.id, n.id)
    assert dropped == stats.nodes_dropped
    if kind != "voice":
        assert stats.nodes_dropped == 0 and stats.quotes_changed == 0


def test_json_variant_results_are_long_valid_json():
    cases, stats = _variants("json")
    assert stats.results_rewritten > 0
    for old, new in zip(_sample(), cases, strict=True):
        before = _result_bodies(old.observed.text)
        after = _result_bodies(new.observed.text)
        calls = sum(e.role == "tool" for e in events(old.observed.text))
        assert len(after) >= max(len(before), calls)
        for body in after:
            assert len(body) >= 1000
            json.loads(body)
        for line in new.observed.text.split("\n") if new.observed.kind == "trace" else ():
            assert line.startswith(("[", "  ")) or not line, line  # continuation indent
        rest = iter(json.loads(a) for a in after)  # added results sit between the kept ones
        for original in map(json.loads, before):
            want = original if isinstance(original, dict) else {"data": original}
            assert any({k: d.get(k) for k in want} == want for d in rest), new.id


def test_json_variant_adds_a_result_after_a_call_without_one():
    new = make_variant(_case(TRACE, []), "json")
    roles = [e.role for e in events(new.observed.text)]
    assert roles[roles.index("tool") + 1] == "result"
    doc = json.loads(_result_bodies(new.observed.text)[0])
    assert doc["tool"] == "refund" and doc["arguments"] == {"order_id": "7", "amount": "9.5"}


def test_voice_is_deterministic_for_a_seed():
    case = _sample()[0]
    one, two = make_variant(case, "voice", seed=3), make_variant(case, "voice", seed=3)
    assert json.dumps(one.to_dict()) == json.dumps(two.to_dict())
    texts = {make_variant(c, "voice", seed=s).observed.text for c in _sample()[:20] for s in (0, 1)}
    assert len(texts) > 20  # another seed, another voice


def test_voice_rewords_only_the_agent_text():
    cases, stats = _variants("voice")
    assert stats.sentences_reworded > 0 and stats.changed > len(cases) // 2
    for old, new in zip(_sample(), cases, strict=True):
        if old.observed.kind != "trace":
            continue
        kept = [
            old.observed.text[e.start : e.end]
            for e in events(old.observed.text)
            if e.role not in ("assistant", None)
        ]
        now = [
            new.observed.text[e.start : e.end]
            for e in events(new.observed.text)
            if e.role not in ("assistant", None)
        ]
        assert kept == now


@pytest.mark.parametrize("kind", KINDS)
def test_labels_are_unchanged(kind):
    for old, new in zip(_sample(), _variants(kind)[0], strict=True):
        assert new.id == f"{old.id}:{kind}"
        assert (new.contract, new.query, new.clean, new.family, new.location) == (
            old.contract,
            old.query,
            old.clean,
            old.family,
            old.location,
        )
        assert new.observed.output == old.observed.output
        assert new.observed.invariants == old.observed.invariants
        assert [n.gold for n in new.observed.nodes] == [
            n.gold for n in old.observed.nodes if n.id in {m.id for m in new.observed.nodes}
        ]


@pytest.mark.parametrize("kind", KINDS)
def test_every_variant_case_reads_back_as_a_valid_case(kind):
    for new in _variants(kind)[0]:
        back = read_case(json.dumps(new.to_dict()))
        assert back.observed.text == new.observed.text


def test_every_variant_of_the_whole_suite_is_valid_and_drops_no_node():
    for kind in KINDS:
        _, stats = variant_cases(_suite_cases(), kind, seed=0)  # make_variant reads each back
        assert stats.cases == 1400 and stats.nodes_dropped == 0, kind


def test_cli_variants_writes_a_suite_folder_per_kind(capsys, tmp_path):
    small = tmp_path / "suite"
    shutil.copytree(SUITE / "contracts", small / "contracts")
    lines = (SUITE / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:12]
    (small / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["variants", str(small), "--kind", "all", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0 and "variants: 48/48 (100%)" in err
    summary = json.loads(out)
    assert set(summary["kinds"]) == set(KINDS)
    for kind in KINDS:
        suite = load_suite(tmp_path / "out" / kind)
        assert len(suite.cases) == 12 and not suite.errors
        assert all(c.id.endswith(f":{kind}") for c in suite.cases)
        assert sorted(suite.contracts) == sorted(
            p.stem for p in (SUITE / "contracts").glob("*.json")
        )


def test_cli_variants_rejects_an_unknown_kind(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["variants", str(SUITE), "--kind", "typo", "--out", str(tmp_path)])
    assert exc.value.code == 2


def test_merged_writes_the_shared_steps_of_a_document_that_had_none():
    text = "[assistant] I have checked it.\n[assistant] It is refunded.\n[tool] done()\n"
    case = _case(text, [_span_of(text, "It is refunded."), _span_of(text, "[tool] done()")])
    case.observed.has_steps = False
    doc = merged(case).to_dict()["observed"]
    assert [n["step"] for n in doc["nodes"]] == [0, 1]
