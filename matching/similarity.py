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
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import snowballstemmer

from .trace import strip_tag

THRESHOLD = 0.35
_WORD = re.compile(r"[a-z0-9]+")
# A quote without its role tag: the trace module reads tags; kept under this name for
# similarity callers.
strip_role_tag = strip_tag


@cache
def stopwords() -> frozenset[str]:
    """The stop words of the spec's ``stopwords.txt`` (shipped in ``matching/data``).

    Returns
    -------
    frozenset of str
    """
    text = (Path(__file__).resolve().parent / "data" / "stopwords.txt").read_text("utf-8")
    return frozenset(
        w.strip() for w in text.splitlines() if w.strip() and not w.lstrip().startswith("#")
    )


_stemmer = snowballstemmer.stemmer("english")


@cache
def stem(word: str) -> str:
    return _stemmer.stemWord(word)


@lru_cache(maxsize=1 << 16)
def tokens(text: str) -> frozenset[str]:
    """The normalised, stop-word-free, stemmed token set of ``text``.

    Memoised: the same declared labels are tokenised for every case of a suite.

    Parameters
    ----------
    text : str

    Returns
    -------
    frozenset of str
    """
    stop = stopwords()
    norm = unicodedata.normalize("NFKC", text).casefold()
    return frozenset(stem(w) for w in _WORD.findall(norm) if w not in stop)


def sim(a: frozenset[str], b: frozenset[str]) -> float:
    """sim(A, B) = 0.5 |A∩B|/|A∪B| + 0.5 |A∩B|/min(|A|,|B|), to 6 decimals.

    Parameters
    ----------
    a, b : frozenset of str
        Token sets.

    Returns
    -------
    float
        0.0 when either set is empty.
    """
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return round(0.5 * inter / len(a | b) + 0.5 * inter / min(len(a), len(b)), 6)


def similarity_matrix(rows: Sequence[frozenset[str]], cols: Sequence[frozenset[str]]) -> np.ndarray:
    """sim of every row set against every column set.

    Parameters
    ----------
    rows, cols : sequence of frozenset of str
        Token sets.

    Returns
    -------
    numpy.ndarray
        A dense ``len(rows) x len(cols)`` float matrix, rounded to 6 decimals.
    """
    n, m = len(rows), len(cols)
    if n == 0 or m == 0:
        return np.zeros((n, m))
    vocab: dict[str, int] = {}
    ri, rp = _indices(rows, vocab)
    ci, cp = _indices(cols, vocab)
    v = max(len(vocab), 1)
    if (n + m) * v <= _DENSE_CELLS:
        # Small problems (one case of a suite): dense incidence matrices, no
        # scipy.sparse construction overhead. Same products, same result.
        rd = np.zeros((n, v))
        rd[np.repeat(np.arange(n), np.diff(rp)), ri] = 1.0
        cd = np.zeros((m, v))
        cd[np.repeat(np.arange(m), np.diff(cp)), ci] = 1.0
        inter = rd @ cd.T
    else:
        from scipy import sparse  # ~0.1 s to import: only for large problems

        r = sparse.csr_matrix((np.ones(len(ri)), ri, rp), shape=(n, v))
        c = sparse.csr_matrix((np.ones(len(ci)), ci, cp), shape=(m, v))
        inter = (r @ c.T).toarray()
    a = np.fromiter((len(s) for s in rows), dtype=np.float64, count=n)[:, None]
    b = np.fromiter((len(s) for s in cols), dtype=np.float64, count=m)[None, :]
    union = a + b - inter
    small = np.minimum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 0.5 * inter / union + 0.5 * inter / small
    out[(a == 0) | (b == 0) | (inter == 0)] = 0.0
    return np.round(out, 6)


_DENSE_CELLS = 1 << 20


def _indices(
    sets: Sequence[frozenset[str]], vocab: dict[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """CSR column indices and row pointers of the sets' token-incidence matrix."""
    indptr = [0]
    indices: list[int] = []
    for s in sets:
        for t in s:
            indices.append(vocab.setdefault(t, len(vocab)))
        indptr.append(len(indices))
    return np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)
