"""Token similarity (ALGORITHMS.md §2, token mode), vectorised.

Texts are normalised (NFKC, casefold), split into runs of ``[a-z0-9]``, stripped of the
stop words of ``stopwords.txt`` and stemmed with the Snowball English stemmer; token
*sets* are compared with ``0.5 * Jaccard + 0.5 * overlap coefficient``. Whole matrices
come from one sparse product of token-incidence matrices, never a Python double loop.

>>> sorted(tokens("Approving the refunds, approved!"))
['approv', 'refund']
>>> sim(tokens("Approve the refund"), tokens("Approved the refund to the card"))
0.833333
>>> similarity_matrix([tokens("Approve the refund")],
...                   [tokens("Approved the refund to the card"), tokens("hello")]).tolist()
[[0.833333, 0.0]]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import snowballstemmer
from scipy import sparse

THRESHOLD = 0.35
_WORD = re.compile(r"[a-z0-9]+")
_ROLE_TAG = re.compile(r"^\[(?:system|user|assistant|tool|result)\] ")


@cache
def stopwords() -> frozenset[str]:
    text = (Path(__file__).resolve().parent / "data" / "stopwords.txt").read_text("utf-8")
    return frozenset(
        w.strip() for w in text.splitlines() if w.strip() and not w.lstrip().startswith("#")
    )


_stemmer = snowballstemmer.stemmer("english")


@cache
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def tokens(text: str) -> frozenset[str]:
    """The normalised, stop-word-free, stemmed token set of ``text``."""
    stop = stopwords()
    norm = unicodedata.normalize("NFKC", text).casefold()
    return frozenset(_stem(w) for w in _WORD.findall(norm) if w not in stop)


def strip_role_tag(quote: str) -> str:
    """A trace line's text without its leading ``[role] `` tag."""
    return _ROLE_TAG.sub("", quote, count=1)


def sim(a: frozenset[str], b: frozenset[str]) -> float:
    """sim(A, B) = 0.5 |A∩B|/|A∪B| + 0.5 |A∩B|/min(|A|,|B|), to 6 decimals."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return round(0.5 * inter / len(a | b) + 0.5 * inter / min(len(a), len(b)), 6)


def similarity_matrix(rows: Sequence[frozenset[str]], cols: Sequence[frozenset[str]]) -> np.ndarray:
    """sim of every row set against every column set, as a dense float matrix."""
    n, m = len(rows), len(cols)
    if n == 0 or m == 0:
        return np.zeros((n, m))
    vocab: dict[str, int] = {}
    r = _incidence(rows, vocab)
    c = _incidence(cols, vocab)
    r.resize((n, len(vocab)))
    c.resize((m, len(vocab)))
    inter = (r @ c.T).toarray()
    a = np.fromiter((len(s) for s in rows), dtype=np.float64, count=n)[:, None]
    b = np.fromiter((len(s) for s in cols), dtype=np.float64, count=m)[None, :]
    union = a + b - inter
    small = np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 0.5 * inter / union + 0.5 * inter / small
    out[(a == 0) | (b == 0) | (inter == 0)] = 0.0
    return np.round(out, 6)


def _incidence(sets: Sequence[frozenset[str]], vocab: dict[str, int]) -> sparse.csr_matrix:
    indptr = [0]
    indices: list[int] = []
    for s in sets:
        for t in s:
            indices.append(vocab.setdefault(t, len(vocab)))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    return sparse.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(sets), max(len(vocab), 1)),
    )
