"""Context sections of an instruction artifact: prose that frames the procedure.

Policies and procedures open with sections such as *Purpose*, *Scope*, *Background* or
*Definitions* and often close with *References* or a *Revision history*. They say why
the procedure exists and where it applies; they do not tell anyone to do anything, so a
proposer that turns their sentences into action nodes only adds work for the annotator
(every one of them has to be rejected).

Two signals, both general English rather than anything about one suite:

- the **heading**: once numbering ("2.", "3A.", "Section 4:") and filler words ("and",
  "of", "this", "document", ...) are set aside, every remaining word is a context word
  ("Purpose", "Scope and applicability", "Terms and definitions", "Revision history");
- the **sentence**: inside such a section a sentence is still proposed when it directs
  someone: it holds a deontic modal ("must", "shall", "should", "is required to", ...),
  or it opens with an imperative ("Verify ...", "Ask ...", "Never ...", "Do not ..."),
  or with a condition whose main clause directs ("If the caller is a minor, ask for a
  guardian" does; "When a flight is cancelled, passengers need a fast answer" does not).

>>> is_context_heading("2. Scope")
True
>>> is_context_heading("Purpose and scope of this procedure")
True
>>> is_context_heading("Scope the request")  # an instruction, not a section name
False
>>> is_context_heading("Procedure")
False
>>> directs("This procedure makes sure we never disclose data to the wrong person.")
False
>>> directs("Requests from the police must be referred to Legal.")
True
>>> directs("**Never** share the card number.")
True
>>> directs("When a flight is cancelled, passengers need a fast, fair answer.")
False
>>> directs("If the caller is a minor, ask for a guardian.")
True
"""

from __future__ import annotations

import re

__all__ = ["CONTEXT_WORDS", "directs", "is_context_heading"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that name a framing section on their own ("Purpose", "Scope", "Glossary") ...
_ANCHORS = _words(
    """
    purpose purposes scope background overview introduction context aim aims objective
    objectives goal goals rationale applicability definitions glossary terminology
    abbreviations acronyms references history changelog about summary audience terms
    """
)
# ... and words that do so only beside one of them ("Revision history", "Key
# terms", "Related documents"): alone, "Changes" or "Record" may well name a step.
_COMPANIONS = _words(
    """
    key related documents document revision revisions change changes version
    versions record control owner ownership reference definition intro
    """
)
CONTEXT_WORDS = _ANCHORS | _COMPANIONS
# Filler that may sit between context words in a heading.
_FILLER = _words(
    """
    and or of the this these our a an to for in & procedure policy protocol sop guide
    guideline guidelines section part
    """
)
# Numbering before a heading's words: "2.", "3A.", "4.1", "IV.", "Section 4:".
_NUMBERING = re.compile(
    r"^(?:(?i:section|part|chapter|appendix)\s+)?"
    r"(?:\d{1,3}(?:\.\d{1,3})*[A-Za-z]?[.):]?|[IVXLCivxlc]{1,5}[.):])\s+"
)
# Deontic modals: a sentence holding one tells someone what must (not) happen.
_MODALS = re.compile(
    r"\b(must|shall|should|ought to|needs? to|ha(?:ve|s) to|(?:is|are|be) required to|may not)\b",
    re.IGNORECASE,
)
# Words that start an instruction: imperatives, prohibitions and conditions. A plain
# description ("This procedure sets out ...", "It applies to ...") starts otherwise.
_DIRECTIVE_OPENERS = _words(
    """
    never always do don't avoid verify check confirm validate ensure
    make ask tell inform notify explain offer send give provide collect request record log
    note write say state respond reply answer refuse decline escalate refer transfer route
    contact call email search look find open close create update cancel stop start use
    follow keep read review approve reject deny apply redact deliver choose select
    """
)
_EMPHASIS = re.compile(r"[*_`]+")
# A condition up to the end of its clause ("If ..., ", "When ...: ", "If ... then ").
_CONDITION = re.compile(r"(?:if|when|whenever|unless|in case)\b[^,:;]*?(?:[,:;]|\s+then\b)", re.I)


def is_context_heading(heading: str) -> bool:
    """Whether ``heading`` names a framing section (Purpose, Scope, Definitions, ...)."""
    text = _NUMBERING.sub("", _EMPHASIS.sub("", heading).strip())
    words = [w for w in re.findall(r"[a-z&']+", text.lower()) if w not in _FILLER]
    return any(w in _ANCHORS for w in words) and all(w in CONTEXT_WORDS for w in words)


def directs(sentence: str) -> bool:
    """Whether ``sentence`` tells someone what to do (a modal, an imperative, a condition)."""
    text = _EMPHASIS.sub("", sentence).strip()
    if _MODALS.search(text):
        return True
    if condition := _CONDITION.match(text):
        # "If the caller is a minor, ask for a guardian" directs; "When a flight is
        # cancelled, passengers need a fast answer" describes: the main clause decides
        rest = text[condition.end() :]
        return not rest.strip() or directs(rest)
    first = re.match(r"[A-Za-z']+", text)
    return first is not None and first.group(0).lower() in _DIRECTIVE_OPENERS
