"""Reads of what reviewers taught: a contract's enactments, a run's latest correction."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from matching.formats import node_texts_of_meta
from matching.trace import strip_tag

from ..models import Contract, Enactment, Run, RunCorrection


def taught_enactments(contract: Contract) -> dict[str, list[str]]:
    """Node id -> the enactment texts reviewers confirmed on ``contract``'s runs."""
    out: dict[str, list[str]] = defaultdict(list)
    for node_id, text in Enactment.objects.filter(contract=contract).values_list("node_id", "text"):
        out[node_id].append(text)
    return dict(out)


def enactment_list(contract: Contract) -> list[Enactment]:
    return list(Enactment.objects.filter(contract=contract).select_related("reviewer", "run"))


def with_taught(doc: dict[str, Any], contract: Contract) -> dict[str, Any]:
    """``doc`` (an exported contract) with the taught enactments after each node's own
    ``meta.enactment`` (FORMAT.md), and their provenance in ``meta.taught_enactments``."""
    rows = enactment_list(contract)
    if not rows:
        return doc
    by_node: dict[str, list[Enactment]] = defaultdict(list)
    for e in rows:
        by_node[e.node_id].append(e)
    for node in doc["nodes"]:
        taught = by_node.get(node["id"])
        if not taught:
            continue
        texts = [*node_texts_of_meta(node["meta"]), *(e.text for e in taught)]
        node["meta"] = {
            **node["meta"],
            "enactment": list(dict.fromkeys(texts)),
            "taught_enactments": [
                {
                    "text": e.text,
                    "run": e.run_id,
                    "step": e.step_id,
                    "reviewer": e.reviewer.get_username() if e.reviewer else None,
                    "at": e.created_at.isoformat(),
                }
                for e in taught
            ],
        }
    return doc


def latest_correction(run: Run) -> RunCorrection | None:
    return RunCorrection.objects.filter(run=run).select_related("reviewer").first()


def step_text(overlay: dict[str, Any], step_id: str) -> str:
    """What observed step ``step_id`` of a run's overlay says (its quotes, role tags
    removed); "" when the overlay has no such step."""
    text = overlay.get("trace", {}).get("text", "")
    for o in overlay.get("observed", []):
        if o["id"] == step_id:
            quotes = (strip_tag(text[s["start"] : s["end"]]) for s in o["spans"])
            return " ".join(q.strip() for q in quotes if q.strip())
    return ""


# Rows of the many-at-once correction table: a page for a long trace stays small, and the
# graph and the single pair form reach every step.
STEPS_LISTED = 150


def correction_context(run: Run, can_teach: bool) -> dict[str, Any]:
    """What the run page's correction partial shows: the latest correction, the weak
    pairings of the engine's own reading, and (for a reviewer) every step with what it
    is now, to correct many at once."""
    shown = run.overlay or {}
    automatic = (run.automatic or {}).get("overlay") or shown
    latest = latest_correction(run) if run.is_corrected else None
    nodes = {n["id"]: n for n in shown.get("nodes", [])}
    pairs = [
        {"expected": n["id"], "label": n["label"], "observed": o["id"], "weak": n.get("weak")}
        for n in shown.get("nodes", [])
        for o in n.get("observed", [])
        if o["relation"] == "pairs"
    ]
    paired = {p["observed"]: p["expected"] for p in pairs}
    now = {o["id"]: o["status"] for o in shown.get("observed", [])}
    steps = [
        {
            "id": o["id"],
            "label": o["label"],
            "status": now.get(o["id"], "commentary"),
            "paired_with": paired.get(o["id"], ""),
        }
        for o in automatic.get("observed", [])
    ]
    return {
        "correction": latest,
        "weak_count": automatic.get("weak", 0),
        "weak_steps": [o for o in automatic.get("observed", []) if o.get("weak")],
        "can_teach": can_teach and run.overlay is not None,
        "teach_steps": [o for o in shown.get("observed", []) if o["status"] != "paired"],
        "teach_obligations": [n for n in nodes.values() if n["active"]],
        "teach_pairs": pairs,
        "correct_steps": steps[:STEPS_LISTED],
        "correct_more": max(0, len(steps) - STEPS_LISTED),
    }
