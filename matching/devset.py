"""A development set of labelled real traces: contract, one query per task, traces, labels.

The layout is ``fixtures/taubench/``'s: ``contracts/<id>.json`` (queries embedded, one
per task, ``t<task_id>``), ``traces/task<N>-trial<T>.txt`` (rendered traces) and
``labels.jsonl`` (one hand label per trajectory: ``compliant``, ``violations`` with
``message_index``, ``family``, ``rule``). Three views of a label:

- *strict*: every rule of the policy, as labelled;
- *procedural*: the steps a contract's obligations model (omission, wrong branch,
  ordering, extra action); a trajectory whose only violations are global rules
  (invariants: a reply sent with a tool call, information not from a tool) is
  procedurally compliant;
- *contract*: what the contract judges, the procedure plus the global rules that an
  invariant with a machine check states (a labelled rule counts when the invariant's
  evidence quotes it). Invariants without a check are left unjudged (ALGORITHMS.md
  §3.5), so their breaches are not counted.

Folds hold whole tasks out: no task's trajectories are both fitted and scored.

>>> folds_by_task([DevItem("t1", 1, 0, "", {}), DevItem("t2", 2, 0, "", {})], 2)
[[0], [1]]
>>> turn = "Only one tool call at a time."
>>> it = DevItem("t1", 1, 0, "", {"compliant": False, "violations": [
...     {"family": "invariant_violation", "rule": turn}]})
>>> [it.violates(v, checked=[turn]) for v in VIEWS]
[False, True, True]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .formats import Observed
from .validate import load_contract

if TYPE_CHECKING:
    from .model import Contract

PROCEDURAL = ("omission", "wrong_branch", "ordering", "extra_action")
VIEWS = ("procedural", "contract", "strict")


@dataclass(frozen=True)
class DevItem:
    query: str
    task: int
    trial: int
    text: str
    label: dict[str, Any]

    def violates(self, view: str = "procedural", checked: Sequence[str] = ()) -> bool:
        """Whether the label says the trajectory breaks the policy (in ``view``; for
        *contract*, ``checked`` is :func:`checked_rules` of the contract)."""
        if view == "strict":
            return not self.label["compliant"]
        rules = [_words(r) for r in checked] if view == "contract" else []
        return any(
            v["family"] in PROCEDURAL or any(_words(v["rule"]) in r for r in rules)
            for v in self.label["violations"]
        )


def checked_rules(contract: Contract) -> list[str]:
    """The policy text that the contract's machine-checked invariants quote."""
    return [
        contract.text[s.start : s.end]
        for inv in contract.invariants
        if inv.check
        for s in inv.evidence
    ]


def _words(text: str) -> str:
    return " ".join(text.split()).lower()


def load_devset(root: Path, contract: str = "airline") -> tuple[Contract, list[DevItem]]:
    """The contract and the labelled trajectories of a development-set folder."""
    c = load_contract(root / "contracts" / f"{contract}.json")
    items = []
    for line in (root / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        lab = json.loads(line)
        path = root / "traces" / f"task{lab['task_id']}-trial{lab['trial']}.txt"
        text = path.read_text(encoding="utf-8")
        items.append(DevItem(f"t{lab['task_id']}", lab["task_id"], lab["trial"], text, lab))
    return c, items


def observed_of(item: DevItem) -> Observed:
    """The trace read by the behaviour extractor, as a pasted trace is."""
    from .behaviour import extract_behaviour

    return extract_behaviour(item.text, kind="trace")


def folds_by_task(items: list[DevItem], k: int) -> list[list[int]]:
    """Indices of ``items`` in ``k`` folds, each task wholly in one (tasks dealt in
    order of their id)."""
    tasks = sorted({it.task for it in items})
    fold_of = {t: i % k for i, t in enumerate(tasks)}
    return [[i for i, it in enumerate(items) if fold_of[it.task] == f] for f in range(k)]


def load_pair_labels(root: Path) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """``pairs.jsonl`` of a development-set folder: (task, trial) -> what each labelled
    stretch of the trace enacts (``{"spans": [[start, end], ...], "nodes": [...]}``);
    empty without the file."""
    path = root / "pairs.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out[(d["task_id"], d["trial"])] = d["pairs"]
    return out
