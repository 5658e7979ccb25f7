"""Each list of names (modes, extractors, input kinds, source kinds, failure families,
judges) is defined once, in the engine; the web app's choices, its forms, the JSON
Schemas and the command line either read it from there or are held to it here, so a
name added to the engine cannot be missing from a form or a schema. No database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.forms.runs import BatchForm, RunForm
from audit.models import FAMILY_FIELDS, ExtractorName, InputKind, JudgeKind, RunMode
from matching import cli, extractors, gate, uploads
from matching.importers import INPUT_KINDS
from matching.llm.judge import JUDGES
from matching.model import EXTRACTOR_CHOICES, EXTRACTORS, FAMILIES, MODES, SOURCE_KINDS

SCHEMAS = Path(__file__).resolve().parents[1] / "matching" / "schemas"


def test_the_web_apps_choices_are_the_engines_lists():
    assert tuple(RunMode.values) == MODES
    assert tuple(ExtractorName.values) == EXTRACTOR_CHOICES == ("none", *EXTRACTORS)
    assert tuple(InputKind.values) == INPUT_KINDS
    assert tuple(JudgeKind.values) == JUDGES
    assert set(FAMILY_FIELDS) == set(FAMILIES)


def test_the_forms_offer_the_engines_lists():
    form = RunForm(llm_ready=False)
    assert _values(form, "mode") == MODES
    assert _values(form, "extractor") == EXTRACTOR_CHOICES
    assert _values(form, "input_kind") == ("auto", *INPUT_KINDS)
    # the form lists a trace first, the likelier paste: the same names, in its own order
    assert set(_values(form, "source_kind")) == {"auto", *SOURCE_KINDS}
    batch = BatchForm(llm_ready=False)
    assert _values(batch, "mode") == MODES
    assert _values(batch, "extractor") == EXTRACTOR_CHOICES


def _values(form: Any, name: str) -> tuple[str, ...]:
    return tuple(str(value) for value, _ in form.fields[name].choices)


def test_the_engine_modules_share_one_list_each():
    assert uploads.MODES is MODES
    assert uploads.EXTRACTOR_CHOICES is EXTRACTOR_CHOICES
    assert uploads.SOURCE_KINDS is SOURCE_KINDS
    assert extractors.EXTRACTORS is EXTRACTORS
    assert gate.POLICIES  # the gate's policies are its own (no other copy)


def _options(parser: Any, command: str, option: str) -> tuple[str, ...]:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return tuple(next(a for a in sub._actions if option in a.option_strings).choices)


def test_the_command_line_offers_the_engines_lists():
    parser = cli.build_parser()
    for command in ("match", "suite", "check"):
        assert _options(parser, command, "--mode") == MODES
    assert _options(parser, "match", "--extractor") == EXTRACTOR_CHOICES
    assert _options(parser, "suite", "--extractor") == EXTRACTOR_CHOICES
    assert _options(parser, "check", "--extractor") == EXTRACTORS
    assert _options(parser, "extract", "--extractor") == EXTRACTORS
    assert _options(parser, "extract", "--kind") == SOURCE_KINDS
    assert _options(parser, "import", "--format") == ("auto", *INPUT_KINDS[1:])
    assert _options(parser, "judge", "--judge") == JUDGES


def _enums(node: Any, path: str = "$") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        if "enum" in node:
            yield path, node["enum"]
        for key, value in node.items():
            yield from _enums(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _enums(value, f"{path}[{i}]")


EXPECTED_ENUMS = {
    "family": FAMILIES,
    "mode": MODES,
    "source.properties.kind": SOURCE_KINDS,
}


@pytest.mark.parametrize("schema", sorted(p.name for p in SCHEMAS.glob("*.json")))
def test_the_schemas_enumerate_the_engines_lists(schema):
    doc = json.loads((SCHEMAS / schema).read_text(encoding="utf-8"))
    for path, enum in _enums(doc):
        for suffix, names in EXPECTED_ENUMS.items():
            if path.endswith(f".{suffix}"):
                assert tuple(enum) == names, f"{schema} {path}"


def test_the_schema_check_reads_every_enumeration_it_should():
    """Families in case.json and report.json, the mode in report.json, the source kind
    in observed.json and case.json: a renamed path would make the check above vacuous."""
    found = [
        (schema.name, path)
        for schema in SCHEMAS.glob("*.json")
        for path, _ in _enums(json.loads(schema.read_text(encoding="utf-8")))
        if any(path.endswith(f".{suffix}") for suffix in EXPECTED_ENUMS)
    ]
    assert len(found) == 5, found


STATIC = Path(__file__).resolve().parents[1] / "static"


@pytest.mark.parametrize(
    ("stylesheet", "selector"),
    [("css/review.css", ".f-{}"), ("css/overlay.css", ".ce-fam--{}")],
)
def test_every_family_has_its_colour_in_the_stylesheets(stylesheet, selector):
    css = (STATIC / stylesheet).read_text(encoding="utf-8")
    missing = [f for f in FAMILIES if selector.format(f) + " " not in css]
    assert missing == [], f"{stylesheet} has no {selector} rule for {missing}"


def test_the_judge_prompt_describes_every_family():
    from matching.llm.judge import JUDGE_PROMPT

    assert [f for f in FAMILIES if f"\n- {f}: " not in JUDGE_PROMPT] == []
