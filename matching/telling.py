"""What semantic mode reads as *telling*: obligations to tell the user the outcome, the
messages that state something to the user, and a closing message that opens as a recap.

These predicates feed two rules of :mod:`matching.semantic_match` (*share* and *cover
said*, docs/engine.md "Semantic mode"); they read wording and speech acts only, never a
contract's ids.
"""

from __future__ import annotations

import re

from .behaviour import speech_act
from .formats import ObservedNode
from .model import Node
from .semantic import SPEECH_ACTS, is_tool_call
from .similarity import strip_role_tag

# An obligation to report the outcome starts with a verb of telling (its label or its
# description) and names the outcome, a summary or the next steps: "Summarise the
# outcome", "Notify the requester of the outcome", "Confirm the outcome and next steps.
# Tell the customer what was decided and what happens next."
_TELLING = re.compile(
    r"^(?:tell|inform|notify|summari[sz]e|recap|explain|advise|remind|warn|state)\b", re.I
)
_OUTCOME = re.compile(
    r"\b(?:outcome|summar\w*|recap\w*|what (?:was|has been|is) (?:done|decided)|"
    r"what happens next|next steps)\b",
    re.I,
)


def reports_outcome(n: Node) -> bool:
    """Whether ``n`` is an obligation to tell the user the outcome: an action whose label
    or description starts with a verb of telling and names the outcome, a summary or the
    next steps (a specific message, "Tell the patient the earliest refill date", is not).

    >>> reports_outcome(Node("s", "action", "Summarise the outcome", True, []))
    True
    >>> reports_outcome(Node("d", "action", "Give the earliest refill date", True, []))
    False
    """
    texts = (n.label, n.description)
    return (
        n.type == "action"
        and any(_TELLING.match(t.strip()) for t in texts)
        and any(_OUTCOME.search(t) for t in texts)
    )


_RECAP = re.compile(
    r"^(?:(?:ok(?:ay)?|right|alright|all right|great|perfect|understood|good)[,.!]\s*)?"
    r"(?:so\b|in short\b|in summary\b|in brief\b|to sum (?:it )?up\b|to summari[sz]e\b|"
    r"to recap\b|recap\b|overall\b|all in all\b|all told\b)",
    re.I,
)


def recaps(o: ObservedNode, text: str) -> bool:
    """Whether one of ``o``'s sentences opens as a recap ("So you're on SK322 …", "To sum
    up, …", "Understood, so nothing has been queued …").

    >>> from matching.formats import Span
    >>> t = "[assistant] To sum up, your refund is on its way."
    >>> recaps(ObservedNode("o1", "", [Span(12, len(t))], 0), t)
    True
    """
    return any(_RECAP.match(strip_role_tag(text[s.start : s.end]).strip()) for s in o.evidence)


def tells(o: ObservedNode, text: str) -> bool:
    """Whether ``o`` is a message to the user that states something (not a tool call, not
    a question): its speech act when the extractor gave one, else its first sentence's."""
    if is_tool_call(o, text) or not o.evidence:
        return False
    act = o.description
    if act not in SPEECH_ACTS:
        first = o.evidence[0]
        act = speech_act(strip_role_tag(text[first.start : first.end]))
    return act not in ("call", "ask")
