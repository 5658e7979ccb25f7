"""The 'voice' variant's rewording rules: fixed, general English (``data/voice.json``).

Rules, each drawn with a seeded generator: contractions made or expanded (one direction
per case), a table of common rephrasings, polite openers added or removed, filler
sentences ("Thanks for reaching out.") left out, and a polite closer added. The table is
general English written once; it names no contract's wording and is never edited to move
results.

>>> import random
>>> rules = load_rules()
>>> reword("I have verified it, but I cannot refund it.", rules, random.Random(0),
...        "contract", rate=1.0)
"I've confirmed it, but I can't refund it."
>>> reword("I've checked it.", rules, random.Random(0), "expand", rate=1.0)
'I have checked it.'
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..extract import sentence_spans
from .rewrite import Builder

DATA = Path(__file__).resolve().parents[1] / "data" / "voice.json"
DIRECTIONS = ("contract", "expand")


@dataclass(frozen=True)
class Rules:
    """The compiled rules of ``data/voice.json``."""

    rate: float
    tables: dict[str, tuple[re.Pattern[str], dict[str, str]]]  # contract, expand, phrases
    opener_add_rate: float
    openers: tuple[str, ...]
    opener_remove_rate: float
    remove_lead: re.Pattern[str]
    remove_sentences: tuple[re.Pattern[str], ...]
    closer_add_rate: float
    closers: tuple[str, ...]


def _key(s: str) -> str:
    return " ".join(s.lower().replace("’", "'").split())


def _table(pairs: list[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One case-insensitive pattern matching every left side, and left -> right."""
    mapping = {_key(a): b for a, b in pairs}
    alts = sorted(mapping, key=len, reverse=True)
    body = "|".join(re.escape(a).replace("'", "['’]").replace(r"\ ", r"\s+") for a in alts)
    return re.compile(rf"(?<![\w'’])(?:{body})(?![\w'’])", re.I), mapping


@cache
def load_rules(path: Path = DATA) -> Rules:
    """Read and compile the rules.

    Parameters
    ----------
    path : pathlib.Path
        A rules file; ``matching/data/voice.json`` by default.

    Returns
    -------
    Rules
    """
    d = json.loads(path.read_text(encoding="utf-8"))
    pairs = [(a, b) for a, b in d["contractions"]]
    op, cl = d["openers"], d["closers"]
    return Rules(
        rate=float(d["rate"]),
        tables={
            "contract": _table(pairs),
            "expand": _table([(b, a) for a, b in pairs]),
            "phrases": _table([(a, b) for a, b in d["phrases"]]),
        },
        opener_add_rate=float(op["add_rate"]),
        openers=tuple(op["add"]),
        opener_remove_rate=float(op["remove_rate"]),
        remove_lead=re.compile(op["remove_lead"], re.I),
        remove_sentences=tuple(re.compile(p, re.I) for p in op["remove_sentences"]),
        closer_add_rate=float(cl["add_rate"]),
        closers=tuple(cl["add"]),
    )


def _cased(found: str, new: str) -> str:
    """``new`` with the case of ``found``'s first letter ("I" stays upper case)."""
    if found[:1].isupper():
        return new[:1].upper() + new[1:]
    if new == "I" or new.startswith(("I ", "I'", "I’")):
        return new
    return new[:1].lower() + new[1:]


def reword(
    sentence: str, rules: Rules, rng: random.Random, direction: str, *, rate: float | None = None
) -> str:
    """``sentence`` with contractions (``direction``) and the phrase table applied.

    Each match is rewritten with probability ``rate`` (the rules' rate by default); a
    pass never rewrites its own output.

    Parameters
    ----------
    sentence : str
    rules : Rules
    rng : random.Random
    direction : {"contract", "expand"}
    rate : float, optional

    Returns
    -------
    str
    """
    p = rules.rate if rate is None else rate
    curly = "’" in sentence
    for name in (direction, "phrases"):
        pattern, mapping = rules.tables[name]

        def sub(m: re.Match[str], mapping: dict[str, str] = mapping) -> str:
            if rng.random() >= p:
                return m.group(0)
            new = _cased(m.group(0), mapping[_key(m.group(0))])
            return new.replace("'", "’") if curly else new

        sentence = pattern.sub(sub, sentence)
    return sentence


def _is_filler(sentence: str, rules: Rules) -> bool:
    return any(p.match(sentence) for p in rules.remove_sentences)


def _drop_lead(sentence: str, rules: Rules) -> str:
    m = rules.remove_lead.match(sentence)
    if not m or m.end() >= len(sentence):
        return sentence
    rest = sentence[m.end() :]
    return rest[:1].upper() + rest[1:]


def rewrite_message(
    b: Builder, start: int, end: int, rng: random.Random, direction: str, rules: Rules
) -> int:
    """Reword one agent message ``b.old[start:end]`` (its text after the role tag).

    Sentence by sentence (the engine's splitter): a filler sentence may be left out
    (never the last one left), a leading "Sure," may go, the first sentence may get a
    polite opener, and every sentence is reworded by :func:`reword`.

    Returns
    -------
    int
        How many sentences were left out.
    """
    spans = list(sentence_spans(b.old[start:end], start))
    left = len(spans)
    removed = 0
    prev_end = None  # the end of the last sentence kept
    for i, (s, e) in enumerate(spans):
        sentence = b.old[s:e]
        if left > 1 and _is_filler(sentence, rules) and rng.random() < rules.opener_remove_rate:
            # with the white space after it (nothing kept yet) or before it
            b.delete(s, spans[i + 1][0]) if prev_end is None else b.delete(prev_end, e)
            left, removed = left - 1, removed + 1
            continue
        new = sentence
        if rng.random() < rules.opener_remove_rate:
            new = _drop_lead(new, rules)
        new = reword(new, rules, rng, direction)
        if i == 0 and rng.random() < rules.opener_add_rate:
            new = f"{rng.choice(rules.openers)} {new}"
        b.replace(s, e, new)
        prev_end = e
    return removed
