"""The six perturbation generators of ALGORITHMS.md §5.

Each generator lists a family's candidates in the spec's fixed order, as
``(location, make)`` pairs: ``make()`` builds the perturbed document (or ``None`` when
the candidate does not apply). :func:`matching.perturb.perturb_case` shuffles them and
keeps the first that the oracle evaluator confirms.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import checks, tool_args, tool_checks
from ..conditioning import Expected
from ..evaluate import evaluate_detailed
from ..model import Case, Contract, Observed, names
from ..similarity import THRESHOLD, sim, tokens
from ..trace import events, is_call, tag
from .document import Doc, DocNode

# Actions an agent might take that no procedure of the suite supports. The generator
# keeps only those whose similarity to every declared node is below the threshold.
UNSUPPORTED_ACTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "Subscribed the user to the marketing newsletter",
        "Added the email to a promotional mailing list.",
        "I've also signed you up for our weekly newsletter with seasonal promotions.",
    ),
    (
        "Posted a summary on social media",
        "Shared the conversation publicly.",
        'post_to_social(channel="twitter", text="Helped another happy customer today!")',
    ),
    (
        "Recommended a premium upgrade",
        "Upsold a paid tier.",
        "By the way, our Platinum tier comes with lounge perks for just 19.99 a month.",
    ),
    (
        "Scheduled a satisfaction survey call",
        "Booked a follow-up survey.",
        'schedule_survey_call(slot="tomorrow 09:00")',
    ),
    (
        "Changed the preferred language",
        "Switched the profile language to French.",
        'update_profile(language="fr")',
    ),
    (
        "Shared a weather forecast",
        "Talked about tomorrow's weather.",
        "Looks like sunshine and 24 degrees tomorrow, perfect for a walk.",
    ),
    (
        "Exported the chat log to a spreadsheet",
        "Copied the transcript into a shared sheet.",
        'export_transcript(format="xlsx", share_with="everyone")',
    ),
    (
        "Recommended a podcast",
        "Suggested a lifestyle podcast episode.",
        "If you like, the latest episode of our lifestyle podcast is great listening.",
    ),
)


@dataclass
class Ctx:
    contract: Contract
    expected: Expected
    clean: Case
    rng: random.Random

    def doc(self) -> Doc:
        return Doc.of(self.clean.observed)


# A candidate: its label location and a maker of the perturbed document (None: n/a).
Candidate = tuple[str, Callable[[], "Observed | None"]]


def _omission(ctx: Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    req = set(e.required)
    gold = {n.gold for n in ctx.clean.observed.nodes}
    for n in e.nodes:
        node = c.by_id[n]
        if n not in req or node.checked_output or n not in gold:
            continue
        if any(k in e.active and c.by_id[k].required for k in c.children[n]):
            continue

        def make(n: str = n) -> Observed | None:
            d = ctx.doc()
            return None if d.remove(d.by_gold(n)) is None else d.observed()

        yield n, make


def _enactment(node: Any, rng: random.Random) -> str:
    en = node.meta.get("enactment")
    if isinstance(en, list) and en:
        return str(rng.choice(en))
    if isinstance(en, str) and en.strip():
        return en.strip()
    label = node.label.rstrip(".")
    return f"{label}: {node.description.rstrip('.')}." if node.description else f"{label}."


def _branch_steps(c: Contract, outcome: str) -> list[str]:
    """B' and the required nodes below it; nested decisions take their first outcome."""
    out = [outcome]
    stack = list(reversed(c.children[outcome]))
    while stack:
        n = stack.pop()
        node = c.by_id[n]
        if node.type == "branch_condition" and c.by_id[node.parent or ""].type == "decision":
            if c.outcomes[node.parent or ""][0] != n:
                continue
        if node.required and not node.checked_output:
            out.append(n)
        stack.extend(reversed(c.children[n]))
    return out


def _wrong_branch(ctx: Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    for d, pick in e.decisions.items():
        inside = set(e.subtree(pick))
        for alt in c.outcomes[d]:
            if alt == pick:
                continue

            def make(d: str = d, alt: str = alt, inside: set[str] = inside) -> Observed | None:
                doc = ctx.doc()
                victims = [n for n in doc.nodes if n.gold in inside]
                pos = doc.remove(victims) if victims else None
                if victims and pos is None:
                    return None
                if pos is None:
                    own = doc.by_gold(d)
                    u = doc.unit(own[0]) if own else None
                    pos = u[1] if u else len(doc.text)
                pieces: list[tuple[DocNode | None, str]] = []
                group = ("inserted", d)
                for x in _branch_steps(c, alt):
                    node = c.by_id[x]
                    text = _enactment(node, ctx.rng)
                    if doc.kind == "trace":
                        text = tag("tool" if is_call(text) else "assistant") + text
                    pieces.append(
                        (
                            DocNode(
                                doc.new_id(),
                                node.label,
                                node.description,
                                node.type,
                                x,
                                (group, x),
                                [],
                            ),
                            text,
                        )
                    )
                doc.insert(pos, pieces)
                return doc.observed()

            yield d, make


def _ordering(ctx: Ctx) -> Iterator[Candidate]:
    e = ctx.expected
    base = evaluate_detailed(e, ctx.clean.observed, mode="oracle")
    pairs = base.alignment.pairs
    for edge in e.edges:
        if edge.kind not in ("requires", "enables"):
            continue
        u, v = edge.source, edge.target
        if u not in pairs or v not in pairs or base.pos[u] == base.pos[v]:
            continue
        if base.status.get(u) != "direct" or base.status.get(v) != "direct":
            continue

        def make(u: str = u, v: str = v) -> Observed | None:
            return _move(ctx, pairs[v], before=pairs[u])

        def make_after(u: str = u, v: str = v) -> Observed | None:
            return _move(ctx, pairs[u], after=pairs[v])

        yield f"{u}->{v}", make
        yield f"{u}->{v}", make_after


def _move(
    ctx: Ctx, mover: str, *, before: str | None = None, after: str | None = None
) -> Observed | None:
    doc = ctx.doc()
    node = doc.node(mover)
    cut = doc.cut(node)
    if cut is None:
        return None
    seg, _ = cut
    anchor = doc.node(before or after or "")
    u = doc.unit(anchor)
    if u is None:
        return None
    node.group = ("moved", mover)
    # Before the anchor's text, or right after it (its unit ends at the next unit).
    pos = u[0] if before is not None else u[1]
    doc.paste(node, pos, seg)
    return doc.observed()


def _extra_action(ctx: Ctx) -> Iterator[Candidate]:
    c = ctx.contract
    declared = [tokens(f"{n.label} {n.description}") for n in c.nodes]
    taken = {n.id for n in ctx.clean.observed.nodes}
    nid = next(f"x{i}" for i in range(1, len(taken) + 2) if f"x{i}" not in taken)
    for label, desc, text in UNSUPPORTED_ACTIONS:
        t = tokens(f"{label} {desc} {text}")
        if any(sim(t, d) >= THRESHOLD for d in declared):
            continue

        def make(label: str = label, desc: str = desc, text: str = text) -> Observed | None:
            doc = ctx.doc()
            bounds = sorted({u[0] for n in doc.nodes if (u := doc.unit(n))} | {len(doc.text)})
            pos = ctx.rng.choice(bounds)
            if doc.kind == "trace":
                line = tag("tool" if is_call(text) else "assistant") + text
            else:
                line = f"{label}." if is_call(text) else text
            doc.insert(pos, [(DocNode(nid, label, desc, "action", None, ("extra", nid), []), line)])
            return doc.observed()

        yield nid, make


def _invariant(ctx: Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    by_id = {i.id: i for i in c.invariants}
    for i in e.invariants:
        inv = by_id[i]

        def make(inv: Any = inv) -> Observed | None:
            doc = ctx.doc()
            check = inv.check or {}
            if "forbid_regex" in check:
                example = check.get("violation_example")
                if not example:
                    return None
                return _append_to_last_assistant(doc, example)
            if "require_regex" in check:
                return _delete_matches(doc, check["require_regex"])
            if tool_checks.is_tool_check(check):
                return _break_tool_check(doc, check)
            doc.invariants[inv.id] = 0.0
            return doc.observed()

        yield i, make


def _append_to_last_assistant(doc: Doc, example: str) -> Observed | None:
    t = doc.text
    if doc.kind == "trace":
        said = [e for e in events(t) if e.role == "assistant"]
        if not said:
            return None
        pos = said[-1].end
    else:
        pos = len(t.rstrip())
    if doc.kind == "response" and not example.startswith(" "):
        example = " " + example
    holders = [n for n in doc.nodes for s in n.spans if s[1] == pos]
    doc.replace(pos, pos, example)
    for n in holders:
        for s in n.spans:
            if s[1] == pos:
                s[1] = pos + len(example)
    return doc.observed()


def _break_tool_check(doc: Doc, check: Mapping[str, Any]) -> Observed | None:
    """Insert the tool calls that break ``check`` before the trace's last event: a
    forbidden tool, a tool outside the permitted list, one call past the limit
    (repeating the trace's last call), or two calls with no result between them."""
    if doc.kind != "trace":
        return None
    calls = tool_checks.tool_calls(doc.kind, doc.text)
    last = f"{calls[-1].name}({calls[-1].arguments})" if calls else "lookup()"
    if "forbid_tools" in check:
        lines = [f"{check['forbid_tools'][0]}()"]
    elif "allow_tools" in check:
        allowed = set(check["allow_tools"])
        lines = [f"{next(n for n in ('unlisted_tool', 'other_tool') if n not in allowed)}()"]
    elif "one_act_per_turn" in check:
        lines = [last, last]
    else:
        lines = [last] * (int(check["max_tool_calls"]) + 1 - len(calls))
    pos = list(events(doc.text))[-1].start
    doc.replace(pos, pos, "".join(f"[tool] {x}\n" for x in lines))
    return doc.observed()


def _delete_matches(doc: Doc, rx: str) -> Observed | None:
    # The evaluator's regex engine, so what is deleted is exactly what a check finds.
    try:
        matches = [(a, b) for a, b in checks.spans(rx, doc.text) if b > a]
        if doc.output is not None:
            cut = checks.spans(rx, doc.output)
            doc.output = "".join(doc.output[a:b] for a, b in _gaps(cut, len(doc.output)))
    except checks.CheckTimeout:
        return None
    for a, b in reversed(matches):
        doc.replace(a, b, "")
    return doc.observed()


def _gaps(cuts: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The intervals of ``[0, size)`` outside the sorted, disjoint ``cuts``."""
    out, pos = [], 0
    for a, b in cuts:
        out.append((pos, a))
        pos = b
    out.append((pos, size))
    return out


def _output(ctx: Ctx) -> Iterator[Candidate]:
    c, e = ctx.contract, ctx.expected
    for n in e.nodes:
        node = c.by_id[n]
        if not node.checked_output:
            continue
        for how in ctx.rng.sample(["drop_key", "wrong_type", "not_json"], 3):

            def make(node: Any = node, how: str = how) -> Observed | None:
                doc = ctx.doc()
                doc.output = _corrupt(doc.output, node.meta, how, ctx.rng)
                return None if doc.output is None else doc.observed()

            yield n, make
    yield from _call_candidates(ctx)


def _call_candidates(ctx: Ctx) -> Iterator[Candidate]:
    """A call of a tool-bound node with ``meta.tool_args``, one argument made wrong: each
    constrained argument of the node's first call, in declaration order."""
    c, e = ctx.contract, ctx.expected
    if not any("tool_args" in c.by_id[n].meta for n in e.nodes):
        return
    obs = ctx.clean.observed
    calls = tool_checks.tool_calls(obs.kind, obs.text)
    facts = tool_args.user_facts(e.query.text, obs.kind, obs.text)
    for n in e.nodes:
        meta = c.by_id[n].meta
        tools = set(names(meta.get("tool")))
        call = next((x for x in calls if x.name in tools), None)
        if call is None or not isinstance(meta.get("tool_args"), Mapping):
            continue
        for key, rule in meta["tool_args"].items():
            if rule == tool_args.IGNORED:
                continue

            def make(call: Any = call, key: str = key, rule: Any = rule) -> Observed | None:
                value = tool_args.wrong_value(rule, facts)
                new = None if value is None else tool_args.with_value(call.arguments, key, value)
                return None if new is None else _rewrite_call(ctx.doc(), call, new)

            yield n, make


def _rewrite_call(doc: Doc, call: Any, arguments: str) -> Observed | None:
    """``doc`` with the arguments of ``call`` (on its line) replaced."""
    ev = next(
        (x for x in events(doc.text) if doc.text.count("\n", 0, x.start) + 1 == call.line), None
    )
    if ev is None:
        return None
    old = f"{call.name}({call.arguments})"
    at = doc.text.find(old, ev.start)
    if at < 0 or at >= ev.end:
        return None  # a call written over several lines is left alone
    doc.replace(at, at + len(old), f"{call.name}({arguments})")
    return doc.observed()


def _corrupt(output: str | None, meta: dict[str, Any], how: str, rng: random.Random) -> str | None:
    if output is None:
        return None
    schema = meta.get("json_schema")
    if how == "not_json":
        if schema is None and "regex" in meta:
            return output + " (draft)"
        return output.rstrip().rstrip("}") + ", <truncated"
    if schema is None:
        return None
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    required = [k for k in schema.get("required", []) if k in value]
    if how == "drop_key":
        if not required:
            return None
        key = rng.choice(required)
        value = {k: v for k, v in value.items() if k != key}
        return json.dumps(value)
    props = schema.get("properties", {})
    keys = [k for k in required if k in props] or [k for k in value if k in props]
    if not keys:
        return None
    key = rng.choice(keys)
    current = value[key]
    value = copy.deepcopy(value)
    value[key] = [current] if not isinstance(current, list) else {"value": current}
    return json.dumps(value)


GENERATORS: dict[str, Callable[[Ctx], Iterator[Candidate]]] = {
    "omission": _omission,
    "wrong_branch": _wrong_branch,
    "ordering": _ordering,
    "extra_action": _extra_action,
    "invariant_violation": _invariant,
    "output_contract": _output,
}
