"""How well tool-binding suggestions (matching/tools.py) recover the suite's bindings.

    PYTHONPATH=. .venv/bin/python scripts/tool_threshold.py [--write docs/engine.md]

Gold: on every contract of ``fixtures/suite``, the action and validation nodes that
carry ``meta.tool``. The catalogue of a contract is the set of tool names its nodes
bind, each with a description synthesised from the name alone (the identifier split
into words), so no answer leaks from the node text into the tool text. Every action and
validation node is asked for a suggestion; a node without ``meta.tool`` should get none.

A suggestion is right when it names one of the node's gold tools. Precision = right /
suggestions; recall = right / gold nodes. Each similarity (token, semantic blend) is
scored at thresholds 0.20-0.70; the threshold is then chosen by leave-one-contract-out:
for each contract, the threshold of best F1 on the other nine is applied to it, and the
held-out suggestions are pooled. The table goes to stdout, and with ``--write FILE``
between the markers ``<!-- tool-threshold:begin/end -->`` of FILE.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.tools import BINDABLE_TYPES, NodeText, Tool, suggest_bindings  # noqa: E402

GRID = [round(0.20 + 0.05 * i, 2) for i in range(11)]
BEGIN, END = "<!-- tool-threshold:begin -->", "<!-- tool-threshold:end -->"


@dataclass
class Case:
    """One contract: its bindable nodes, their gold tools, the best suggestion's score."""

    name: str
    gold: dict[str, set[str]]  # node id -> gold tool names (empty: none)
    best: dict[str, tuple[str, float]]  # node id -> (tool, score) at threshold 0


def _gold_tools(meta: dict) -> set[str]:
    tool = meta.get("tool")
    if isinstance(tool, str):
        return {tool}
    return {t for t in tool if isinstance(t, str)} if isinstance(tool, list) else set()


def _catalogue(names: set[str]) -> list[Tool]:
    # The description says only what the name says: its words, as a sentence.
    out = []
    for name in sorted(names):
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
        out.append(Tool(name, words.strip().capitalize() + "."))
    return out


def load_cases(suite: Path, encoder) -> list[Case]:
    cases = []
    for path in sorted((suite / "contracts").glob("*.json")):
        doc = json.loads(path.read_text())
        nodes = [n for n in doc["nodes"] if n["type"] in BINDABLE_TYPES]
        gold = {n["id"]: _gold_tools(n.get("meta") or {}) for n in nodes}
        tools = _catalogue(set().union(*gold.values()))
        texts = [NodeText(n["id"], n["type"], n["label"], n.get("description", "")) for n in nodes]
        found = suggest_bindings(texts, tools, encoder=encoder, threshold=0.0)
        best = {s.node_id: (s.tool, s.score) for s in found}
        cases.append(Case(path.stem, gold, best))
    return cases


def counts(cases: list[Case], threshold: float) -> tuple[int, int, int]:
    """(right suggestions, all suggestions, gold nodes) at ``threshold``."""
    right = made = gold = 0
    for c in cases:
        gold += sum(1 for g in c.gold.values() if g)
        for node, (tool, score) in c.best.items():
            if score >= threshold:
                made += 1
                right += tool in c.gold[node]
    return right, made, gold


def prf(right: int, made: int, gold: int) -> tuple[float, float, float]:
    p = right / made if made else 0.0
    r = right / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def best_threshold(cases: list[Case]) -> float:
    # Highest F1; among equals the higher threshold (fewer suggestions to dismiss).
    return max(GRID, key=lambda t: (round(prf(*counts(cases, t))[2], 6), t))


def leave_one_out(cases: list[Case]) -> tuple[list[float], tuple[int, int, int]]:
    chosen, total = [], [0, 0, 0]
    for i, held in enumerate(cases):
        t = best_threshold(cases[:i] + cases[i + 1 :])
        chosen.append(t)
        total = [a + b for a, b in zip(total, counts([held], t), strict=True)]
    return chosen, (total[0], total[1], total[2])


def table(by_mode: dict[str, list[Case]]) -> str:
    lines = [
        "| threshold | " + " | ".join(f"{m} P | {m} R | {m} F1" for m in by_mode) + " |",
        "|---:|" + "---:|" * (3 * len(by_mode)),
    ]
    for t in GRID:
        cells = []
        for cases in by_mode.values():
            cells += [f"{x:.3f}" for x in prf(*counts(cases, t))]
        lines.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "| similarity | threshold on all 10 | thresholds chosen per fold | "
        "held-out P | held-out R | held-out F1 |"
    )
    lines.append("|---|---:|---|---:|---:|---:|")
    for mode, cases in by_mode.items():
        chosen, total = leave_one_out(cases)
        p, r, f = prf(*total)
        folds = ", ".join(f"{t:.2f}" for t in chosen)
        lines.append(
            f"| {mode} | {best_threshold(cases):.2f} | {folds} | {p:.3f} | {r:.3f} | {f:.3f} |"
        )
    n_nodes = sum(len(c.gold) for c in next(iter(by_mode.values())))
    n_gold = counts(next(iter(by_mode.values())), 0.0)[2]
    lines.append("")
    lines.append(
        f"{len(next(iter(by_mode.values())))} contracts, {n_nodes} action/validation nodes,"
        f" {n_gold} of them bound by `meta.tool` (gold)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "fixtures" / "suite")
    parser.add_argument("--write", type=Path, help="a Markdown file with the markers")
    args = parser.parse_args(argv)
    from matching.embed import encoder

    by_mode = {"token": load_cases(args.suite, None), "semantic": load_cases(args.suite, encoder())}
    out = table(by_mode)
    print(out)
    if args.write:
        text = args.write.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        if not rest:
            raise SystemExit(f"{args.write} has no {BEGIN} marker")
        args.write.write_text(f"{head}{BEGIN}\n{out}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
