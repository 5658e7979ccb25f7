"""Extractor registry: a name -> a function ``(text, *, kind) -> Observed``.

``heuristic`` is offline and always available. ``llm`` uses the OpenAI-compatible
endpoint configured in the environment (``matching.llm.config``); with none configured
it falls back to the heuristic and says so with a :class:`FallbackWarning`, so nothing
ever pretends an LLM ran.

>>> get_extractor("heuristic").__name__
'extract_heuristic'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .extract import extract_heuristic
from .formats import Observed
from .model import EXTRACTORS as EXTRACTORS  # the registry's names, listed in the model

Extractor = Callable[..., Observed]


class FallbackWarning(UserWarning):
    """An LLM component was asked for but none is configured: the heuristic ran."""


def get_extractor(name: str) -> Extractor:
    """The extractor called ``name``.

    Parameters
    ----------
    name : {"heuristic", "llm"}

    Returns
    -------
    callable
        ``(text, *, kind) -> Observed``. ``"llm"`` without a configured endpoint gives the
        heuristic, with a :class:`FallbackWarning`.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if name == "heuristic":
        return extract_heuristic
    if name == "behaviour":
        from .behaviour import extract_behaviour

        return extract_behaviour
    if name == "llm":
        from .llm.config import LLMConfig

        config = LLMConfig.from_env()
        if not config.configured:
            warnings.warn(
                "no LLM endpoint configured (set CONTRACTEVAL_LLM_API_KEY or OPENAI_API_KEY):"
                " using the offline heuristic extractor instead",
                FallbackWarning,
                stacklevel=2,
            )
            return extract_heuristic
        from .llm.extractor import LLMExtractor

        return LLMExtractor(config)
    raise ValueError(f"unknown extractor {name!r}: expected one of {EXTRACTORS}")


def reextract(observed: Observed, extractor: str | Extractor = "heuristic") -> Observed:
    """New nodes for an observed document's source text; output and labels are kept.

    Only the nodes are replaced: the final ``output``, audited invariant scores and the
    contract/query fields carry over, since they are not extracted from the text.

    Parameters
    ----------
    observed : Observed
    extractor : str or callable
        An extractor name (:func:`get_extractor`), or an extractor itself (an LLM
        extractor on a caller's own client).

    Returns
    -------
    Observed
    """
    extract = get_extractor(extractor) if isinstance(extractor, str) else extractor
    fresh = extract(observed.text, kind=observed.kind)
    fresh.output = observed.output
    fresh.invariants = dict(observed.invariants)
    fresh.contract = observed.contract
    fresh.query = observed.query
    return fresh
