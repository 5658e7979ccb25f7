"""The vocabulary of synthetic contracts: pseudo-words, label verbs, id prefixes, seeds."""

from __future__ import annotations

import itertools
import random
from functools import cache

from ..similarity import stem, stopwords

Rng = random.Random | int | str | None

#: The forbidden-text invariant of every synthetic contract, and text that breaks it.
FORBIDDEN = r"\bCODE-\d{4}\b"
VIOLATION_EXAMPLE = " The access code is CODE-4321."

# One verb per node type opens every declared label (so labels read naturally); no
# pseudo-word shares a stem with them, and observed wordings never use them.
VERB = {
    "intent": "Handle",
    "action": "Process",
    "validation": "Verify",
    "decision": "Decide",
    "branch_condition": "When",
    "refusal": "Refuse",
    "output_requirement": "Return",
}
PREFIX = {
    "intent": "goal",
    "action": "act",
    "validation": "chk",
    "decision": "dec",
    "branch_condition": "br",
    "refusal": "ref",
    "output_requirement": "out",
}


def coerce(rng: Rng) -> random.Random:
    return rng if isinstance(rng, random.Random) else random.Random(0 if rng is None else rng)


@cache
def words() -> tuple[str, ...]:
    """A fixed list of pronounceable pseudo-words with pairwise distinct stems.

    >>> w = words()
    >>> len(w) > 10_000, w[:3] == words()[:3]
    (True, True)
    """
    cons, vow, last = "bdfgklmnprtvz", "aeiou", "bdfgklmnprtvz"
    stop = stopwords()
    reserved = {stem(v.casefold()) for v in VERB.values()} | {
        stem(w) for w in ("call", "ref", "ok", "done", "code", "access", "case", "status")
    }
    seen: set[str] = set()
    out = []
    for a, b, c, d, e in itertools.product(cons, vow, cons, vow, last):
        w = a + b + c + d + e
        s = stem(w)
        if w in stop or s in seen or s in reserved:
            continue
        seen.add(s)
        out.append(w)
    random.Random("contracteval-words").shuffle(out)
    return tuple(out)
