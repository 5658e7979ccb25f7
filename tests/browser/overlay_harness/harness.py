"""A stand-alone page for the run overlay (static/js/overlay.js) and the payloads it shows.

``build_payloads(folder)`` writes overlay payloads (matching/overlay.py) as JSON files;
``serve(folder)`` serves ``/static/`` from the repository, ``/payloads/`` from ``folder``
and the harness page at ``/`` from this directory, on 127.0.0.1 in a thread. The page
mounts ``/payloads/<p>.json`` (query parameter ``p``); ``collapse=0|1`` forces the
collapsing of inactive subtrees.

Run it by hand to look at the overlay::

    .venv/bin/python -m tests.browser.overlay_harness.harness   # prints the URL
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from matching.conditioning import condition
from matching.evaluate import evaluate_detailed
from matching.formats import Observed, read_observed
from matching.overlay import overlay_payload
from matching.synth import synth_contract, synth_execution
from matching.validate import load_contract

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DATA = ROOT / "matching" / "data"
XSS = "<script>alert(1)</script>"


def _docs() -> tuple[dict[str, Any], dict[str, Any]]:
    contract = json.loads((DATA / "refund-mini.json").read_text("utf-8"))
    observed = json.loads((DATA / "refund-mini-observed-q1.json").read_text("utf-8"))
    return contract, observed


def rebuild_trace(doc: dict[str, Any], rows: list[tuple[str, dict[str, Any] | None]]) -> None:
    """Set ``doc``'s text to ``rows`` (line, node quoting that whole line, or None), with
    spans, quotes and steps recomputed in text order."""
    pos = step = 0
    nodes = []
    for line, node in rows:
        if node is not None:
            node["evidence"] = [{"start": pos, "end": pos + len(line), "quote": line}]
            node["step"] = step
            step += 1
            nodes.append(node)
        pos += len(line) + 1
    doc["source"]["text"] = "\n".join(line for line, _ in rows)
    doc["nodes"] = nodes
    ids = {n["id"] for n in nodes}
    doc["edges"] = [e for e in doc.get("edges", []) if e["source"] in ids and e["target"] in ids]


def trace_rows(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """The lines of an observed trace whose nodes each quote one whole line."""
    text = doc["source"]["text"]
    by_start = {n["evidence"][0]["start"]: n for n in doc["nodes"]}
    rows: list[tuple[str, dict[str, Any] | None]] = []
    pos = 0
    for line in text.split("\n"):
        rows.append((line, copy.deepcopy(by_start.get(pos))))
        pos += len(line) + 1
    return rows


def refund_variant(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(contract document, observed document) of a refund-mini variant.

    ``clean``; ``omission`` (o2 removed); ``wrong_branch`` (o4 replaced by a refusal);
    ``ordering`` (o2 after o4); ``extra`` (a newsletter sign-up); ``showcase`` (ordering,
    an extra action and a leaked card number); ``xss`` (HTML in the artifact, the labels
    and the trace).
    """
    contract, observed = _docs()
    rows = trace_rows(observed)
    ids = [n["id"] if n else None for _, n in rows]

    def move_after(nid: str, other: str) -> None:
        row = rows.pop(ids.index(nid))
        ids.pop(ids.index(nid))
        at = ids.index(other) + 1
        rows.insert(at, row)
        ids.insert(at, nid)

    def insert_after(other: str, line: str, node: dict[str, Any]) -> None:
        at = ids.index(other) + 1
        rows.insert(at, (line, node))
        ids.insert(at, node["id"])

    extra = (
        "[assistant] I've also signed you up for our weekly newsletter.",
        {"id": "x1", "label": "Subscribed the customer to the newsletter", "gold": None},
    )
    if name == "clean":
        pass
    elif name == "omission":
        at = ids.index("o2")
        del rows[at], ids[at]
    elif name == "wrong_branch":
        at = ids.index("o4")
        rows[at] = (
            "[assistant] I must decline the refund because the window has passed.",
            {"id": "w1", "label": "Declined the refund", "gold": "decline_refund"},
        )
        ids[at] = "w1"
    elif name == "ordering":
        move_after("o2", "o4")
    elif name == "extra":
        insert_after("o2", *extra)
    elif name == "showcase":
        move_after("o2", "o4")
        insert_after("o3", *extra)
        at = ids.index("o5")
        line, node = rows[at]
        rows[at] = (line + " The card number is 4111 1111 1111 1111.", node)
    elif name == "xss":
        contract["artifact"]["text"] += f"\nAn attacker wrote: {XSS} <img src=x onerror=alert(2)>\n"
        contract["nodes"][1]["label"] = f"Look up the order {XSS}"
        insert_after(
            "o2",
            f"[assistant] Here is some markup: {XSS} <b>bold</b>",
            {
                "id": "x1",
                "label": f"Injected {XSS}",
                "gold": None,
            },
        )
    else:
        raise ValueError(f"unknown refund-mini variant {name!r}")
    rebuild_trace(observed, rows)
    return contract, observed


def refund_payload(name: str, mode: str = "token") -> dict[str, Any]:
    contract_doc, observed_doc = refund_variant(name)
    contract = load_contract(contract_doc)
    obs = read_observed(observed_doc)
    return overlay_payload(evaluate_detailed(condition(contract, "q1"), obs, mode=mode), obs)


def big_payload(seed: int = 2, nodes: int = 300) -> dict[str, Any]:
    """A synthetic contract of about ``nodes`` nodes and a gold execution with a few
    failures: two omissions, one ordering inversion and one extra action (oracle mode)."""
    c = synth_contract(seed, nodes=nodes)
    q = c.queries[0]
    e = condition(c, q)
    obs = synth_execution(c, q, seed, kind="trace", expected=e)
    by_gold = {n.gold: n for n in obs.nodes}
    ids = c.by_id
    leaves = [
        x
        for x in e.required
        if x in by_gold and not ids[x].checked_output and not e.active_children[x]
    ]
    drop = {by_gold[leaves[len(leaves) // 3]].id, by_gold[leaves[2 * len(leaves) // 3]].id}
    kept = [n for n in obs.nodes if n.id not in drop]
    # invert one requires/enables edge between two kept direct nodes
    steps = {n.gold: n for n in kept}
    for edge in e.edges:
        if edge.kind in ("requires", "enables") and edge.source in steps and edge.target in steps:
            a, b = steps[edge.source], steps[edge.target]
            if a.step < b.step and ids[edge.source].type != "decision":
                a.step, b.step = b.step, a.step
                break
    first = obs.nodes[0]
    extra = copy.copy(first)
    extra.id, extra.gold, extra.label = "x1", None, "Offered an unrelated upgrade"
    extra.step = max(n.step for n in kept) + 1
    extra.index = len(obs.nodes)
    kept.append(extra)
    obs = Observed(
        kind=obs.kind,
        text=obs.text,
        nodes=kept,
        edges=[],
        invariants=obs.invariants,
        output=obs.output,
        contract=obs.contract,
        query=obs.query,
    )
    return overlay_payload(evaluate_detailed(e, obs, mode="oracle"), obs)


def build_payloads(folder: Path) -> dict[str, dict[str, Any]]:
    """Write the harness payloads into ``folder``; returns them by name."""
    folder.mkdir(parents=True, exist_ok=True)
    payloads = {
        "refund-mini": refund_payload("showcase"),
        "refund-clean": refund_payload("clean"),
        "refund-wrong-branch": refund_payload("wrong_branch"),
        "xss": refund_payload("xss"),
        "big-300": big_payload(),
    }
    for name, p in payloads.items():
        (folder / f"{name}.json").write_text(json.dumps(p), "utf-8")
    return payloads


class _Handler(http.server.SimpleHTTPRequestHandler):
    payloads: Path = HERE

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        for prefix, base in (("/static/", ROOT / "static"), ("/payloads/", self.payloads)):
            if clean.startswith(prefix):
                rel = Path(clean[len(prefix) :])
                if ".." in rel.parts:
                    return str(HERE / "missing")
                return str(base / rel)
        if clean in ("/", "/index.html"):
            return str(HERE / "index.html")
        return str(HERE / "missing")

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def serve(payloads: Path) -> Iterator[str]:
    """Serve the harness on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(type("H", (_Handler,), {"payloads": payloads}))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys
    import tempfile
    import time

    out = Path(tempfile.mkdtemp(prefix="overlay-"))
    build_payloads(out)
    with serve(out) as url:
        print(f"{url}/?p=refund-mini  (also refund-clean, refund-wrong-branch, xss, big-300)")
        sys.stdout.flush()
        while True:
            time.sleep(3600)
