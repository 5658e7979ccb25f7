"""docs/llm.md must quote the prompts and schemas the code actually sends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matching.llm.client import SYSTEM_GUARD
from matching.llm.extractor import EXTRACTOR_PROMPT, EXTRACTOR_SCHEMA
from matching.llm.judge import INVARIANT_PROMPT, INVARIANT_SCHEMA, JUDGE_PROMPT, VERDICT_SCHEMA
from matching.llm.proposer import PROPOSER_PROMPT, PROPOSER_SCHEMA

DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


@pytest.mark.parametrize(
    "text",
    [SYSTEM_GUARD, PROPOSER_PROMPT, EXTRACTOR_PROMPT, INVARIANT_PROMPT, JUDGE_PROMPT],
    ids=["guard", "proposer", "extractor", "invariant", "judge"],
)
def test_prompt_is_quoted_verbatim(text: str):
    assert f"```\n{text}\n```" in DOC.read_text("utf-8")


@pytest.mark.parametrize(
    "schema",
    [PROPOSER_SCHEMA, EXTRACTOR_SCHEMA, INVARIANT_SCHEMA, VERDICT_SCHEMA],
    ids=["proposer", "extractor", "invariant", "verdict"],
)
def test_schema_is_quoted_verbatim(schema: dict[str, object]):
    assert f"```json\n{json.dumps(schema, indent=1)}\n```" in DOC.read_text("utf-8")


def test_doc_says_no_llm_was_run():
    assert "No real LLM was run in this environment" in DOC.read_text("utf-8")
