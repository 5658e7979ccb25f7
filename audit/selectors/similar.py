"""The same correction elsewhere: steps of other runs of a contract that say what a
corrected step of one run says.

A reviewer who read a step as commentary, or paired it with an obligation, usually
meets the same sentence in the agent's other runs. These reads find it: for each
decision of the run's current corrections, the steps of the contract's other finished
runs whose words match the corrected step's (token similarity of the engine, at least
:data:`SAME_WORDS`) and that are not read that way yet. The reviewer then ticks the
ones to apply (:func:`audit.services.teaching.runs_correct_similar`); nothing is applied
unseen.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import ExtractorName, Run, RunStatus
from .teaching import latest_correction, step_text

SAME_WORDS = 0.8  # the engine's token similarity: a paraphrase of the same sentence
RUNS_SEARCHED = 100  # the contract's latest finished runs; a suggestion list stays short


@dataclass(frozen=True)
class Suggestion:
    run: int
    step: str
    text: str
    kind: str  # "pair" or "commentary"
    expected: str  # the obligation of a pair; "" for commentary
    like: str  # the corrected step of the source run
    score: float

    @property
    def value(self) -> str:
        """The form value that names this suggestion."""
        return f"{self.run}|{self.kind}|{self.expected}|{self.step}"


def similar_corrections(run: Run) -> list[Suggestion]:
    """Steps of the contract's other runs that match the steps ``run``'s corrections
    pair or read as commentary, best match first, one per run and decision."""
    from matching.similarity import tokens  # the engine loads with the first use, not at start-up

    latest = latest_correction(run) if run.is_corrected else None
    if latest is None:
        return []
    c = latest.corrections
    shown = (run.automatic or {}).get("overlay") or run.overlay or {}
    decisions = [("pair", str(e), str(o)) for e, o in c.get("pair", [])]
    decisions += [("commentary", "", str(o)) for o in c.get("commentary", [])]
    wanted = [(kind, e, o, tokens(step_text(shown, o))) for kind, e, o in decisions]
    out: list[Suggestion] = []
    for other in _other_runs(run):
        out += _matches(other, wanted)
    return sorted(out, key=lambda s: (-s.score, s.run, s.step))


def _other_runs(run: Run) -> list[Run]:
    return list(
        Run.objects.filter(contract_id=run.contract_id, status=RunStatus.DONE)
        .exclude(pk=run.pk)
        .exclude(extractor=ExtractorName.LLM)  # correcting one would call the LLM again
        .exclude(overlay=None)
        .only("id", "overlay", "report")
        .order_by("-created_at", "-id")[:RUNS_SEARCHED]
    )


def _matches(other: Run, wanted: list[tuple[str, str, str, frozenset[str]]]) -> list[Suggestion]:
    from matching.similarity import sim, tokens

    overlay = other.overlay or {}
    paired = {a["expected"]: a["observed"] for a in (other.report or {}).get("alignment", [])}
    steps = [(o["id"], step_text(overlay, o["id"])) for o in overlay.get("observed", [])]
    found = []
    for kind, e, like, words in wanted:
        best: tuple[float, str, str] | None = None
        for step, text in steps:
            score = sim(words, tokens(text))
            if score < SAME_WORDS or (kind == "pair" and paired.get(e) == step):
                continue
            if best is None or score > best[0]:
                best = (score, step, text)
        if best is not None:
            found.append(Suggestion(other.pk, best[1], best[2], kind, e, like, best[0]))
    return found
