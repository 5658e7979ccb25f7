"""The behaviour extractor (``--extractor behaviour``): a trace read like a reviewer.

Offline and contract-blind, like the heuristic extractor (ALGORITHMS.md §7), but each
node is one *move* of the agent with a speech act, written as the node's description:

- ``call``: a ``[tool]`` event (one node, its whole line);
- ``ask``: a question or request for information ("Could you give me your order
  number?");
- ``confirm``: asking for the go-ahead before acting ("Shall I go ahead? (yes/no)");
- ``refuse``: declining ("I can't refund this order");
- ``decide``: a conclusion drawn from a fact ("…, so it is inside the return window");
- ``inform``: anything else the agent does or tells.

Rules (docs/engine.md, "The behaviour extractor", has examples):

1. Greetings, thanks, apologies and filler ("let me check", "I can help with that",
   "one moment") are not nodes, nor is a sentence of fewer than three words.
2. A restatement of a move already made (its words a subset of an earlier node's) is not
   a node.
3. Each behavioural sentence is one move, in order, whether the agent said it in one
   message or several: merging or splitting messages never changes the moves, and the
   alignment lets one obligation span adjacent moves. A response (no role tags) is read
   the same way.
4. A request for several things ("your user ID, reservation ID, and the reason for
   cancellation") is one node per thing, all at the same step, so a combined step is
   never an ordering failure (ALGORITHMS.md §3).
5. A bare request for the go-ahead ("Do you want me to go ahead?") joins the move
   before it in the same turn: it asks consent for that move.
6. Labels are the agent's own words (or "Called <tool>"): what a step *is* (its act,
   the tool and arguments, whether it closes the conversation) is read by
   :mod:`matching.observe`, never written into a label.

>>> text = ('[user] Hi, I need to cancel.\\n'
...         '[assistant] Hello! I can help with that. Could you give me your user ID, '
...         'reservation ID, and the reason for cancellation?\\n'
...         '[tool] get_reservation(id="R1")\\n'
...         '[assistant] I cannot cancel a basic economy fare.\\n')
>>> obs = extract_behaviour(text, kind="trace")
>>> [(n.step, n.description, n.label) for n in obs.nodes]  # doctest: +NORMALIZE_WHITESPACE
[(0, 'ask', 'Ask for your user ID'), (0, 'ask', 'Ask for reservation ID'),
 (0, 'ask', 'Ask for the reason for cancellation'), (1, 'call', 'Called get_reservation'),
 (2, 'refuse', 'I cannot cancel a basic economy fare.')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Trace events and sentences are read exactly as the heuristic extractor reads them.
from .extract import FILLER, node_label, sentence_spans
from .formats import Edge, Observed, ObservedNode, Span
from .similarity import tokens
from .trace import events, tool_call

__all__ = ["SPEECH_ACTS", "extract_behaviour", "is_filler", "speech_act"]

SPEECH_ACTS = ("call", "ask", "confirm", "refuse", "inform", "decide")
MIN_WORDS = 3
_TYPE_OF_ACT = {
    "call": "action",
    "ask": "action",
    "confirm": "validation",
    "refuse": "refusal",
    "decide": "decision",
    "inform": "action",
}
_MORE_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|alright|right|great|perfect|certainly|of course|absolutely)[,!.]\s*)?"
    r"(?:let me (?:check|look|see|pull|take a look|find|verify that)\b.*"
    r"|(?:i can|i'?d be happy to|i'?ll be happy to|i will|i'?ll) (?:help|assist)\b.*"
    r"|one moment\b.*|(?:please )?bear with me\b.*|just a (?:moment|second|sec)\b.*"
    r"|i understand\b[^.!?]*[.!]?|(?:no problem|not a problem|happy to help)\b.*"
    r"|(?:i'?m |i am )?(?:checking|looking into (?:it|this|that))\b.*"
    r"|(?:thanks|thank you)(?: for [^.!?]*)?[.!]?)$",
    re.I | re.S,
)
_CONFIRM = re.compile(
    r"\b(?:shall i|should i|do you want me to|would you like me to|can i go ahead|"
    r"(?:ok|okay) to proceed|go ahead\?|is that (?:right|correct|ok)|"
    r"please confirm|can you confirm that|\(yes/no\)|yes or no)",
    re.I,
)
_REFUSE = re.compile(
    r"\b(?:cannot|can't|can not|unable to|won't be able|not able to|not eligible|"
    r"decline|declined|refuse|not allowed|not permitted|isn't possible|is not possible)\b",
    re.I,
)
_ASK = re.compile(
    r"^(?:could|can|would|will|may) (?:you|i have|i get)\b|^please (?:provide|send|share|"
    r"give|tell|confirm|read|enter|upload|type)\b|\b(?:i need|i'll need|i will need) "
    r"(?:your|you to|the)\b|^(?:what|which|when|where|who|how)\b",
    re.I,
)
_DECIDE = re.compile(
    r"\b(?:so|therefore|which means|means|since|because|as a result|eligible|qualif\w+|"
    r"within|outside|past|beyond|exceeds?|more than|less than|counts as|is treated as)\b",
    re.I,
)
_LIST_OBJECT = re.compile(
    r"^(?P<head>.*?\b(?:give me|provide|send me|share|tell me|confirm|need|have)\s+)"
    r"(?P<items>[^?.!]*?,[^?.!]*?\b(?:and|or)\b[^?.!]*?)(?P<tail>[?.!]*)$",
    re.I | re.S,
)


def speech_act(sentence: str) -> str:
    """The speech act of one assistant sentence.

    >>> speech_act("Shall I go ahead? (yes/no)"), speech_act("What is your order number?")
    ('confirm', 'ask')
    >>> speech_act("I'm sorry, but I can't refund it."), speech_act("It was 40 days ago, so it is outside the window.")
    ('refuse', 'decide')
    """
    s = sentence.strip()
    if _CONFIRM.search(s):
        return "confirm"
    if _REFUSE.search(s):
        return "refuse"
    if s.endswith("?") or _ASK.search(s):
        return "ask"
    if _DECIDE.search(s):
        return "decide"
    return "inform"


_INTERJECTION = re.compile(r"^(?:oh no|oh dear|ouch|oh|ah|aw)[,!.]\s*", re.I)
_SYMPATHY = re.compile(
    r"^(?:(?:i'?m|i am|we'?re|we are) )?(?:so |very |really |truly )?sorry\b(?!,? but\b)[^,]*"
    r"|^(?:that|this|it)(?:'s| sounds| must be| must have been| is| was)(?: such| really| so| very)?"
    r"(?: a| an)? (?:horrible|awful|terrible|stressful|frustrating|painful|scary|worrying|"
    r"upsetting|shock|shocking|difficult|rough|hard|nasty|miserable)\b[^,]*",
    re.I | re.S,
)
_INTENSIFIER = re.compile(r"\bso (?=much|many|sorry|very|long|bad)", re.I)


def is_filler(sentence: str) -> bool:
    """Greetings, thanks, apologies, sympathy and filler (not a refusal hidden in an
    apology, nor a sentence one of whose clauses does something).

    >>> is_filler("Ouch, I'm sorry about the fall."), is_filler("Sorry to hear that; that's awful.")
    (True, True)
    >>> is_filler("Thanks for reading back the code; that confirms it's you.")
    False
    >>> is_filler("That's awful, I have blocked the card now.")
    False
    """
    s = sentence.strip()
    if _REFUSE.search(s):
        return False
    clauses = [c.strip() for c in re.split(r";\s*", s) if c.strip()]
    if clauses and all(_filler_clause(c) for c in clauses):
        return True
    return len(re.findall(r"[A-Za-z0-9]+", s)) < MIN_WORDS


def _filler_clause(clause: str) -> bool:
    """One clause that does nothing: a greeting, thanks, filler or sympathy, without a
    conclusion drawn ("sorry for the wait, so I've added a credit" does something)."""
    c = _INTERJECTION.sub("", clause)
    sympathy = _SYMPATHY.match(c)
    if sympathy:
        # "That's awful, I have blocked the card now.": what follows the comma does something
        rest = c[sympathy.end() :].lstrip(" ,")
        if len(re.findall(r"[A-Za-z0-9]+", rest)) >= MIN_WORDS and not _filler_clause(rest):
            return False
    elif not (FILLER.match(c) or _MORE_FILLER.match(c)):
        return False
    return not _DECIDE.search(_INTENSIFIER.sub("", c))


@dataclass
class _Move:
    step: int
    act: str
    label: str
    spans: list[tuple[int, int]] = field(default_factory=list)


def _list_items(text: str, a: int, b: int) -> list[tuple[int, int, str]] | None:
    """The things a request asks for, as (start, end, item) spans, when it asks for
    several; else None."""
    m = _LIST_OBJECT.match(text[a:b])
    if not m:
        return None
    base = a + m.start("items")
    items = m.group("items")
    out = []
    for p in re.finditer(r"[^,]+", items):
        part = re.sub(r"^\s*(?:and|or)\s+", "", p.group(0))
        lead = p.group(0).find(part)
        for q in re.finditer(r"(?:(?!\s(?:and|or)\s).)+", part):
            item = q.group(0).strip()
            if len(item.split()) >= 1 and item:
                s = (
                    base
                    + p.start()
                    + lead
                    + q.start()
                    + (len(q.group(0)) - len(q.group(0).lstrip()))
                )
                out.append((s, s + len(item), item))
    return out if len(out) >= 2 else None


def _moves_of_turn(text: str, turn: list[tuple[int, int]], step: int) -> list[_Move]:
    """One move per behavioural sentence of a turn (the agent's consecutive messages,
    nothing between them), in order: how an agent splits its words into messages never
    changes the moves (a bare request for the go-ahead joins the sentence before it; a
    request for several things is one move per thing)."""
    sents = [
        (x, y) for a, b in turn for x, y in sentence_spans(text[a:b], a) if not is_filler(text[x:y])
    ]
    groups: list[list[tuple[int, int]]] = []
    for i, (x, y) in enumerate(sents):
        if i > 0 and _is_bare_confirm(text[x:y]):
            groups[-1].append((x, y))
        else:
            groups.append([(x, y)])
    moves: list[_Move] = []
    for g in groups:
        at = step + len({mv.step for mv in moves})
        x, y = g[0]
        items = _list_items(text, x, y) if len(g) == 1 and speech_act(text[x:y]) == "ask" else None
        if items:
            moves += [_Move(at, "ask", f"Ask for {it}", [(s, e)]) for s, e, it in items]
            continue
        acts = [speech_act(text[x:y]) for x, y in g]
        strong = [t for t in acts if t in ("confirm", "refuse", "ask")]
        act = strong[0] if strong else ("decide" if "decide" in acts else "inform")
        moves.append(_Move(at, act, node_label(" ".join(text[x:y] for x, y in g)), list(g)))
    return moves


def _is_bare_confirm(sentence: str) -> bool:
    """A request for the go-ahead that names nothing new (at most three content words)."""
    return speech_act(sentence) == "confirm" and len(tokens(sentence)) <= 3


def extract_behaviour(text: str, *, kind: str = "trace") -> Observed:
    """An observed graph of the agent's moves in ``text`` (a trace or a response)."""
    if kind not in ("trace", "response"):
        raise ValueError(f"kind must be 'trace' or 'response', not {kind!r}")
    moves: list[_Move] = []
    step = 0
    if kind == "response":
        moves = [
            _Move(i, speech_act(text[x:y]), node_label(text[x:y]), [(x, y)])
            for i, (x, y) in enumerate(
                (x, y) for x, y in sentence_spans(text, 0) if not is_filler(text[x:y])
            )
        ]
    else:
        turn: list[tuple[int, int]] = []  # the agent's messages since another event
        for event in [*events(text), None]:
            # untagged text before the first event is the agent's
            role = (event.role or "assistant") if event else None
            if event and role == "assistant":
                turn.append((event.start + event.tag_length, event.end))
                continue
            new = _moves_of_turn(text, turn, step)
            moves += new
            step = max((mv.step for mv in new), default=step - 1) + 1
            turn = []
            if event and role == "tool":
                a, b = event.start, event.end
                call = tool_call(text[a + event.tag_length : b])
                name = call[0] if call else text[a + event.tag_length : b].split("(")[0].strip()
                moves.append(_Move(step, "call", f"Called {name or 'tool'}", [(a, b)]))
                step += 1
    return _observed(text, kind, _drop_restatements(text, moves))


def _drop_restatements(text: str, moves: list[_Move]) -> list[_Move]:
    """Moves whose words all appeared in one earlier move (not a call) are not nodes."""
    seen: list[frozenset[str]] = []
    out = []
    for mv in moves:
        words = tokens(" ".join(text[x:y] for x, y in mv.spans))
        if mv.act != "call" and len(words) >= 2 and any(words <= s for s in seen):
            continue
        if mv.act != "call":
            seen.append(words)
        out.append(mv)
    return out


def _observed(text: str, kind: str, moves: list[_Move]) -> Observed:
    steps = {s: i for i, s in enumerate(sorted({mv.step for mv in moves}))}
    nodes = [
        ObservedNode(
            id=f"o{i + 1}",
            label=mv.label,
            evidence=[Span(x, y, text[x:y]) for x, y in mv.spans],
            step=steps[mv.step],
            description=mv.act,
            type=_TYPE_OF_ACT[mv.act],
            gold=None,
            index=i,
        )
        for i, mv in enumerate(moves)
    ]
    edges = [
        Edge(x.id, y.id, "precedes")
        for x, y in zip(nodes, nodes[1:], strict=False)
        if x.step < y.step
    ]
    return Observed(kind=kind, text=text, nodes=nodes, edges=edges)
