"""Semantic similarity (``--mode semantic``): sentence embeddings blended with tokens.

An expected node has several *texts*: ``label. description`` and each enactment
(``meta.enactment``, a string or a list: authored or taught by reviewers). A decision
also has its chosen outcome's texts (the step that takes an outcome evidences the
decision). The similarity of an expected node e and an observed node o is the best,
over e's texts t, of ``ALPHA * cos(t, o) + (1 - ALPHA) * tok(t, o)`` where ``cos`` is
the all-MiniLM-L6-v2 cosine (:mod:`matching.embed`) and ``tok`` the spec's token
similarity. A text taken from an outcome (a ``branch_condition``) does not count for an
observed sentence of the opposite polarity ("it isn't business class" is no evidence of
"business class"). A tool binding gives 1.0, as in token mode.

The matching rules built on this similarity live in :mod:`matching.semantic_match`;
docs/engine.md ("semantic mode") lists every place where they depart from
ALGORITHMS.md §2–§3.

>>> sorted(node_texts_of_meta({"enactment": ["I checked it.", "Checked."]}))
['Checked.', 'I checked it.']
>>> polarity("It isn't business class.") , polarity("It is business class.")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .conditioning import Expected
from .embed import encoder
from .extract import _sentences
from .formats import Node, ObservedNode, node_texts_of_meta
from .similarity import similarity_matrix, strip_role_tag, tokens

SPEECH_ACTS = ("call", "ask", "confirm", "refuse", "inform", "decide")
ALPHA = 0.75  # weight of the embedding cosine in the blend
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|without|cannot|unable)\b|n't\b", re.IGNORECASE
)
_COMPARISON = re.compile(
    r"\b(?:no|not) (?:more|less|later|earlier|longer|fewer|older|newer)\b|\bnot only\b", re.I
)
_CALL = re.compile(r"^[A-Za-z_][\w.-]*\(")
_CODE_PUNCT = re.compile(r"[()=\"',:{}\[\]]")
_SENT = re.compile(r"[^.!?\n]+[.!?]*")
_TOOL_QUOTE = re.compile(r"^\[tool\] |^([A-Za-z_][\w.-]*)\(")


def polarity(text: str) -> bool:
    """True when ``text`` is negated (a negation cue word; "no more than" and the like
    are comparisons, not negations)."""
    return bool(_NEGATION.search(_COMPARISON.sub(" ", text)))


def humanise(quote: str) -> str:
    """A quote as words: no role tag; a tool call ``name(k="v")`` becomes ``name k v``
    with identifiers split at ``_`` (an embedding reads words, not code).

    >>> humanise('[tool] lookup_order(order_id="1042")')
    'lookup order order id 1042'
    """
    q = strip_role_tag(quote)
    if _CALL.match(q):
        q = " ".join(_CODE_PUNCT.sub(" ", q).split())
    return q.replace("_", " ")


def is_tool_call(o: ObservedNode, text: str) -> bool:
    """Whether ``o``'s evidence is a tool call (a ``[tool]`` line or ``name(…)``)."""
    return any(_TOOL_QUOTE.match(text[s.start : s.end]) for s in o.evidence)


def observed_text(o: ObservedNode, text: str) -> str:
    """What an observed node says: its quotes, with label and description when they add
    words (an extracted node's label usually repeats its sentence)."""
    quotes = [humanise(text[s.start : s.end]) for s in o.evidence]
    body = " ".join(quotes)
    # a speech act in the description (behaviour extractor) is a tag, not words said;
    # an extractor's "Called <tool>" label repeats the call
    parts = [o.label, o.description if o.description not in SPEECH_ACTS else ""]
    extra = []
    for p in parts:
        p = p.rstrip("…")
        if not p or p in body or p.startswith("Called "):
            continue
        head = body[:40]
        # a label that prefixes the sentence ("Tell the outcome…: <sentence>") adds the
        # prefix only
        extra.append(p[: p.index(head)].strip() if head and head in p else p)
    return " ".join([*extra, body]).strip()


_LEAD = re.compile(r"^(.{12,}?)[:;]\s")
_ENDS = re.compile(r"[.!?][\"')\]]*$")


def observed_parts(o: ObservedNode, text: str) -> list[str]:
    """An observed node's texts: the whole (:func:`observed_text`), then, when there are
    several, each quote, and the lead clause of each quote before a colon or semicolon (at least three words). Similarity takes the best of them.

    >>> from matching.formats import Span
    >>> t = "In the ticket I recorded the facts: a laptop, a bag and a phone."
    >>> observed_parts(ObservedNode("o1", t, [Span(0, len(t))], 0), t)[1]
    'In the ticket I recorded the facts'
    """
    out = [observed_text(o, text)]
    quotes = [humanise(text[s.start : s.end]) for s in o.evidence]
    # only what the agent said: an extractor's gloss ("Tell the outcome and next steps:")
    # is a guess from position, and read alone it would let any last message pass for a
    # summary
    for q in quotes:
        if len(quotes) > 1:
            out.append(q)
        m = _LEAD.match(q)
        if m and len(m.group(1).split()) >= 3:
            out.append(m.group(1))
    quote = text[o.evidence[0].start : o.evidence[0].end].strip() if o.evidence else ""
    if len(o.evidence) == 1 and not _ENDS.search(quote) and not is_tool_call(o, text):
        # an item of a request ("weakness" in "Any weakness, slurred speech or
        # confusion?") is also read with the sentence that asks for it
        whole = _enclosing_sentence(text, o.evidence[0].start, o.evidence[0].end)
        if whole != quote:
            out.append(humanise(whole))
    return list(dict.fromkeys(out))


def _enclosing_sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``text[start:end]``, cut as the extractors cut
    sentences (a title's full stop ends none), without its line's role tag.

    >>> _enclosing_sentence("[assistant] Hi. Any weakness, or confusion? Ok.", 20, 28)
    'Any weakness, or confusion?'
    >>> _enclosing_sentence("[assistant] Ask Dr. Haddad about any weakness. Ok.", 33, 41)
    'Ask Dr. Haddad about any weakness.'
    """
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    b = len(text) if b < 0 else b
    spans = list(_sentences(text[a:b], a)) or [(a, b)]
    s, e = next(((s, e) for s, e in reversed(spans) if s <= start), spans[0])
    return strip_role_tag(text[s:e].strip())


@dataclass
class TextRow:
    node: int  # index into the expected node list
    text: str
    outcome: bool  # taken from a branch condition: polarity-sensitive


def expected_texts(
    nodes: Sequence[Node], expected: Expected, outcome_wording: bool
) -> list[TextRow]:
    """Every text of every node (label. description, enactments; a decision also its
    chosen outcome's)."""
    by_id = expected.contract.by_id
    rows: list[TextRow] = []
    for i, n in enumerate(nodes):
        own = n.type == "branch_condition"
        for t in _own_texts(n):
            rows.append(TextRow(i, t, own))
        pick = expected.decisions.get(n.id) if n.type == "decision" else None
        if outcome_wording and pick is not None:
            for t in _own_texts(by_id[pick]):
                rows.append(TextRow(i, t, True))
    return rows


def _own_texts(n: Node) -> list[str]:
    head = f"{n.label}. {n.description}".strip() if n.description else n.label
    return [head, *node_texts_of_meta(n.meta)]


@lru_cache(maxsize=64)
def artifact_sentences(artifact: str) -> tuple[str, ...]:
    """The sentences of a contract's artifact text (at least three words each)."""
    out = []
    for m in _SENT.finditer(artifact):
        s = m.group(0).strip(" -*#\t")
        if len(s.split()) >= 3:
            out.append(s)
    return tuple(out)


def blend(
    rows: Sequence[str], outcome: Sequence[bool], obs: Sequence[str], negation: bool
) -> np.ndarray:
    """Blended similarity of every text against every observed text (texts × obs)."""
    if not rows or not obs:
        return np.zeros((len(rows), len(obs)))
    enc = encoder()
    cos = enc.encode(list(rows)) @ enc.encode(list(obs)).T
    tok = similarity_matrix([tokens(t) for t in rows], [tokens(t) for t in obs])
    s = ALPHA * np.clip(cos.astype(np.float64), 0.0, 1.0) + (1 - ALPHA) * tok
    if negation and any(outcome):
        po = np.array([polarity(t) for t in obs])
        for r, (t, oc) in enumerate(zip(rows, outcome, strict=True)):
            if oc:
                s[r, po != polarity(t)] = 0.0
    return s


def node_matrix(
    nodes: Sequence[Node],
    expected: Expected,
    obs: Sequence[str],
    *,
    outcome_wording: bool = True,
    negation: bool = True,
) -> np.ndarray:
    """sim(e, o) for every node × observed text: the best over e's texts."""
    rows = expected_texts(nodes, expected, outcome_wording)
    s = blend([r.text for r in rows], [r.outcome for r in rows], obs, negation)
    out = np.zeros((len(nodes), len(obs)))
    for r, row in enumerate(rows):
        np.maximum(out[row.node], s[r], out=out[row.node])
    return np.round(out, 6)


def cover_scores(expected: Expected, obs: Sequence[str]) -> np.ndarray:
    """For each observed text, its best similarity to any declared node (active, pruned
    or inactive) and any sentence of the contract's artifact text."""
    c = expected.contract
    if not obs:
        return np.zeros(0)
    texts = [t for n in c.nodes for t in _own_texts(n)] + list(artifact_sentences(c.text))
    s = blend(texts, [False] * len(texts), obs, False)
    return s.max(axis=0) if len(texts) else np.zeros(len(obs))
