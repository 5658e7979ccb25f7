"""LLM judges: the invariant judge and the judge baselines of ALGORITHMS.md §7.

- :func:`judge_invariant`: one fixed prompt scoring a declared invariant against a
  response or trace, for invariants without a machine ``check``; a score in [0, 1]
  (< 0.5 is a violation, ALGORITHMS.md §3.5).
- :func:`judge_case` with a kind from :data:`JUDGES`: a verdict
  :class:`Verdict` ``{clean, family, rationale}`` for one case, given
  ``output`` — the instructions (artifact), the query and the final response;
  ``trace`` — plus the whole trace;
  ``trace-checklist`` — plus a label-only checklist of the expected obligations;
  ``expected`` — plus the serialised expected graph G_E(q).
- :func:`judge_suite` runs a judge over a suite and returns
  :class:`~matching.suite.CaseResult` rows for :func:`matching.suite.score` with
  ``locations=False`` (a judge names a family, never a location).

>>> v = Verdict.of({"clean": False, "family": "omission", "rationale": "no lookup"})
>>> (v.verdict, v.family)
('non_clean', 'omission')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..conditioning import Expected, condition
from ..errors import ContractEvalError
from ..evaluate import FAMILIES
from ..formats import Case, Contract, Invariant, Observed
from ..suite import CaseResult, Suite
from ..trace import last_agent_message
from .client import LLMClient, LLMError, data_sections
from .config import LLMConfig
from .locate import chunks

__all__ = [
    "INVARIANT_PROMPT",
    "INVARIANT_SCHEMA",
    "JUDGES",
    "JUDGE_PROMPT",
    "VERDICT_SCHEMA",
    "Verdict",
    "judge_case",
    "judge_invariant",
    "judge_invariants",
    "judge_suite",
]

JUDGES = ("output", "trace", "trace-checklist", "expected")

INVARIANT_PROMPT = """\
You judge whether an AI agent kept one rule in a {kind}.
The DATA holds the rule (section RULE), then the agent's {kind} (or one part of a long
one) and, when there is one, its final output, each section as plain text.
Score 1 when the agent kept the rule, 0 when it clearly broke it, and a value in
between only when the evidence is genuinely ambiguous. Judge only this rule, only
from what the agent itself said or did (not what the user or a tool said).
Give a one-sentence rationale that cites the decisive passage."""

INVARIANT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "rationale"],
    "properties": {"score": {"type": "number"}, "rationale": {"type": "string"}},
}

JUDGE_PROMPT = """\
You audit whether an AI agent followed its instructions when answering a request.
You are given the instructions, the user's request, and {material}.
Decide whether the execution is clean (it followed the instructions) or not. If it is
not clean, name the one failure family that best describes the problem:
- omission: a required step was skipped;
- ordering: steps were done in the wrong order (one required another first);
- extra_action: the agent did something the instructions do not support;
- wrong_branch: the agent took the branch of a decision that does not apply;
- invariant_violation: a rule that must always hold was broken;
- output_contract: the final output does not have the required form.
The DATA has one plain-text section per item (INSTRUCTIONS, REQUEST, FINAL RESPONSE,
then TRACE or RESPONSE, CHECKLIST or EXPECTED GRAPH as given). A long trace comes in
parts, each judged on its own: in a part, report only what that part shows.
Answer with clean (true or false), family (one of the six names, or null when clean)
and a short rationale."""

_MATERIAL = {
    "output": "the agent's final response",
    "trace": "the agent's final response and its whole execution trace",
    "trace-checklist": (
        "the agent's final response, its whole execution trace and a checklist of the"
        " obligations that apply to this request (labels only)"
    ),
    "expected": (
        "the agent's final response, its whole execution trace and the expected graph of"
        " obligations for this request (nodes with types, the hierarchy, ordering edges,"
        " the chosen branch of each decision, and the rules that apply)"
    ),
}

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["clean", "family", "rationale"],
    "properties": {
        "clean": {"type": "boolean"},
        "family": {"type": ["string", "null"], "enum": [*FAMILIES, None]},
        "rationale": {"type": "string"},
    },
}


@dataclass(frozen=True)
class Verdict:
    clean: bool
    family: str | None
    rationale: str

    @property
    def verdict(self) -> str:
        return "clean" if self.clean else "non_clean"

    @classmethod
    def of(cls, data: dict[str, Any]) -> Verdict:
        return cls(bool(data["clean"]), data["family"], str(data["rationale"]))

    def to_dict(self) -> dict[str, Any]:
        return {"clean": self.clean, "family": self.family, "rationale": self.rationale}


def _check_verdict(data: Any) -> str | None:
    if data["clean"] and data["family"] is not None:
        return "a clean verdict must have family null"
    if not data["clean"] and data["family"] is None:
        return f"a verdict that is not clean must name a family, one of {', '.join(FAMILIES)}"
    return None


def _check_score(data: Any) -> str | None:
    s = data["score"]
    return None if 0.0 <= s <= 1.0 else f"$.score must be in [0, 1], not {s}"


# --------------------------------------------------------------------------- invariants


@dataclass(frozen=True)
class InvariantScore:
    score: float
    rationale: str


def judge_invariant(client: LLMClient, invariant: Invariant, observed: Observed) -> InvariantScore:
    """Score one invariant against an observed document's source text (and output).

    A text longer than ``chunk_chars`` is judged in overlapping parts; the rule is
    kept only if it is kept in every part, so the lowest score wins.
    """
    rule = invariant.label + (f" — {invariant.description}" if invariant.description else "")
    worst: InvariantScore | None = None
    for where, part in _parts(client, observed.text):
        sections = [("RULE", rule), (f"{observed.kind.upper()}{where}", part)]
        if observed.output is not None:
            sections.append(("FINAL OUTPUT", observed.output))
        data = client.complete_json(
            purpose="judge-invariant",
            system=INVARIANT_PROMPT.format(kind=observed.kind),
            user=data_sections(sections, f"rule and the agent's {observed.kind}"),
            schema_name="invariant_score",
            schema=INVARIANT_SCHEMA,
            check=_check_score,
        )
        score = InvariantScore(float(data["score"]), data["rationale"])
        if worst is None or score.score < worst.score:
            worst = score
    assert worst is not None  # _parts yields at least one part
    return worst


def _parts(client: LLMClient, text: str) -> list[tuple[str, str]]:
    """``(" (part i of n)", piece)`` of a long text, or ``("", text)``."""
    # Callers may wrap the client (to watch its answers): only complete_json is certain.
    config = getattr(client, "config", None)
    size = max(200, getattr(config, "chunk_chars", LLMConfig.chunk_chars))
    pieces = chunks(text, size=size, overlap=size // 8)
    if len(pieces) == 1:
        return [("", text)]
    n = len(pieces)
    return [(f" (PART {i + 1} OF {n})", text[p.start : p.end]) for i, p in enumerate(pieces)]


def judge_invariants(client: LLMClient, expected: Expected, observed: Observed) -> dict[str, float]:
    """Scores for the invariants of G_E that have no ``check`` and no score yet.

    Merge them into ``observed.invariants`` to have them evaluated (FORMAT.md §4).
    """
    by_id = {i.id: i for i in expected.contract.invariants}
    out: dict[str, float] = {}
    for inv_id in expected.invariants:
        inv = by_id[inv_id]
        if inv.check is None and inv_id not in observed.invariants:
            out[inv_id] = judge_invariant(client, inv, observed).score
    return out


# --------------------------------------------------------------------------- baselines


def final_response(observed: Observed) -> str:
    """What the output-only judge sees as the answer: a response's whole text, or a
    trace's last ``[assistant]`` event (tag removed), then the final ``output``.

    >>> final_response(Observed("trace", "[assistant] Checking.\\n[tool] f()\\n"
    ...                         "[assistant] Done:\\n  refunded.\\n", [], output="{}"))
    'Done:\\n  refunded.\\n\\nFinal output:\\n{}'
    """
    text = observed.text if observed.kind == "response" else last_agent_message(observed.text)
    if observed.output is not None:
        text += f"\n\nFinal output:\n{observed.output}"
    return text


def checklist(expected: Expected) -> list[str]:
    """The labels of the expected obligations and rules, nothing else: the children of
    an any-of node are one item, marked as alternatives; optional steps say so."""
    c = expected.contract
    active = set(expected.nodes)
    required = set(expected.required)
    items: list[str] = []
    grouped: set[str] = set()
    for n in expected.nodes:
        parent = c.by_id[n].parent
        if parent in active and c.by_id[parent].combine == "any":
            if parent not in grouped:
                grouped.add(parent)
                alts = [c.by_id[k].label for k in c.children[parent] if k in active]
                items.append("One of these alternatives (any one suffices): " + " | ".join(alts))
            continue
        optional = n not in required and c.by_id[n].type != "branch_condition"
        items.append(c.by_id[n].label + (" (optional)" if optional else ""))
    rules = {i.id: i.label for i in c.invariants}
    return items + [f"Rule: {rules[i]}" for i in expected.invariants]


def serialise_expected(expected: Expected) -> dict[str, Any]:
    """G_E(q) with each node's type, label, description and parent spelled out."""
    c = expected.contract
    return {
        "nodes": [
            {
                "id": n,
                "type": c.by_id[n].type,
                "label": c.by_id[n].label,
                "description": c.by_id[n].description,
                "parent": c.by_id[n].parent,
                "required": n in expected.required,
            }
            for n in expected.nodes
        ],
        "edges": [e.to_dict() for e in expected.edges if e.kind != "produces"],
        "decisions": dict(expected.decisions),
        "invariants": [
            {"id": i.id, "label": i.label, "description": i.description}
            for i in c.invariants
            if i.id in set(expected.invariants)
        ],
    }


def judge_case(
    client: LLMClient, kind: str, contract: Contract, expected: Expected, observed: Observed
) -> Verdict:
    """One judge's verdict on one execution.

    The material goes as plain-text sections of one data block. A trace longer than
    ``chunk_chars`` is judged in parts and the verdicts combined (:func:`combine`).
    """
    if kind not in JUDGES:
        raise ValueError(f"unknown judge {kind!r}: expected one of {JUDGES}")
    head = [
        ("INSTRUCTIONS", contract.text),
        ("REQUEST", expected.query.text),
        ("FINAL RESPONSE", final_response(observed)),
    ]
    tail = []
    if kind == "trace-checklist":
        tail.append(("CHECKLIST", "\n".join(f"- {x}" for x in checklist(expected))))
    if kind == "expected":
        graph = json.dumps(serialise_expected(expected), ensure_ascii=False, indent=1)
        tail.append(("EXPECTED GRAPH", graph))
    parts = [("", "")] if kind == "output" else _parts(client, observed.text)
    verdicts = []
    for where, piece in parts:
        body = [] if kind == "output" else [(f"{observed.kind.upper()}{where}", piece)]
        data = client.complete_json(
            purpose=f"judge-{kind}",
            system=JUDGE_PROMPT.format(material=_MATERIAL[kind]),
            user=data_sections(head + body + tail, "execution to audit"),
            schema_name="judge_verdict",
            schema=VERDICT_SCHEMA,
            check=_check_verdict,
        )
        verdicts.append(Verdict.of(data))
    return combine(verdicts)


def combine(verdicts: list[Verdict]) -> Verdict:
    """One verdict from the verdicts of a trace's parts.

    A failure a part shows (wrong order, extra action, wrong branch, broken rule, bad
    output) is a failure of the whole. An omission is one only when *every* part
    reports it: a step missing from one part may well be in another.

    >>> ok, miss = Verdict(True, None, "fine"), Verdict(False, "omission", "no lookup")
    >>> combine([ok, miss]).clean, combine([miss, miss]).family
    (True, 'omission')
    >>> combine([ok, Verdict(False, "ordering", "refund before lookup")]).family
    'ordering'
    """
    if len(verdicts) == 1:
        return verdicts[0]
    for v in verdicts:
        if not v.clean and v.family != "omission":
            return v
    if all(not v.clean for v in verdicts):
        return verdicts[0]
    return Verdict(True, None, "; ".join(v.rationale for v in verdicts if v.clean))


def judge_suite(
    suite: Suite,
    kind: str,
    client: LLMClient,
    *,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[CaseResult], list[dict[str, Any]]]:
    """Judge every case (the first ``limit``); returns the rows to score and, per
    case, the verdict and rationale. A case whose call fails counts as wrong (its
    error is kept), as in the engine's suite runs."""
    if kind not in JUDGES:
        raise ValueError(f"unknown judge {kind!r}: expected one of {JUDGES}")
    cases: Sequence[Case] = suite.cases if limit is None else suite.cases[:limit]
    cache: dict[tuple[str, str], Expected] = {}
    results: list[CaseResult] = []
    verdicts: list[dict[str, Any]] = []
    for i, case in enumerate(cases):
        row: dict[str, Any] = {"id": case.id}
        try:
            key = (case.contract, case.query)
            if key not in cache:
                cache[key] = condition(suite.contracts[case.contract], case.query)
            v = judge_case(client, kind, suite.contracts[case.contract], cache[key], case.observed)
        except (LLMError, ContractEvalError) as exc:
            results.append(
                CaseResult(case.id, case.clean, case.family, case.location, None, [], str(exc))
            )
            row["error"] = str(exc)
        else:
            # A judge gives a family, not a location: the location slot stays empty.
            fails = [] if v.clean or v.family is None else [(v.family, "")]
            results.append(
                CaseResult(case.id, case.clean, case.family, case.location, v.verdict, fails)
            )
            row.update(v.to_dict())
        verdicts.append(row)
        if progress:
            progress(i + 1, len(cases))
    if limit is None:
        results.extend(
            CaseResult(e["id"], False, None, None, None, [], e["error"]) for e in suite.errors
        )
    return results, verdicts
