"""Server time and response size of the audit workspace at 1,000 nodes.

Builds a throw-away SQLite database with one contract of N nodes over a ~30k-character
artifact (two thirds proposed), then times the pages and htmx actions a reviewer uses
through Django's test client, in this process (so the figures are the server's time:
views, queries, templates; no network, no browser). Each figure is the median of
``--repeat`` requests after one warm-up request, with the range of CPU time beside it;
CPU seconds of this process are reported beside wall seconds because the machine may be
shared.

    .venv/bin/python scripts/bench_workspace.py [--nodes 1000] [--repeat 7] [--doc]

``--doc`` writes ``docs/benchmarks-workspace.md`` (``make bench-workspace``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import doc  # noqa: E402

HTMX = {"HTTP_HX_REQUEST": "true"}
# CPU ms of the median request, and KB of the answer, a reviewer should not wait past
TARGETS = {
    "workspace page": (300, None),
    "node panel (htmx)": (60, None),
    "confirm + open next (htmx)": (60, 60),
    "reject + open next (htmx)": (60, 60),
}
METHOD = """
A throw-away SQLite database with one contract of N nodes (numbered steps under a root,
two thirds *proposed*, a chain of ``enables`` edges) over a ~30k-character artifact; the
pages and htmx actions a reviewer uses, through Django's test client in this process:
the server's time (views, queries, templates), with no network and no browser. Each row
is the median of the repeated requests after one warm-up request, with the range of CPU
time beside it; each confirm or reject acts on a new proposed node and opens the next
one, as the keyboard does.
"""


def setup(db: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(n_nodes: int):
    """A project, an annotator and a contract of ``n_nodes`` nodes with edges."""
    from django.contrib.auth import get_user_model

    from audit.models import Artifact, Contract, Edge, Membership, Node, Project, Span

    user = get_user_model().objects.create_user("bench", password="bench-pw-1")
    project = Project.objects.create(name="Bench", slug="bench")
    Membership.objects.create(project=project, user=user, role="annotator")
    lines = [f"{i + 1}. Verify record {i} and log it." for i in range(n_nodes - 1)]
    text = "# Big procedure\n\n" + "\n".join(lines) + "\n"
    artifact = Artifact.objects.create(project=project, text=text, media_type="text/markdown")
    contract = Contract.objects.create(project=project, artifact=artifact, key="big")
    root = Node.objects.create(contract=contract, node_id="root", type="intent", label="Big")
    Span.objects.create(node=root, start=2, end=16)
    nodes = Node.objects.bulk_create(
        Node(
            contract=contract,
            node_id=f"n{i}",
            type="action" if i % 4 else "validation",
            label=f"Verify record {i} and log it",
            parent=root,
            position=i + 1,
            review_status="proposed" if i % 3 else "confirmed",
            proposer="heuristic",
            score=0.5,
        )
        for i in range(n_nodes - 1)
    )
    pos, spans = 0, []
    for node, line in zip(nodes, lines, strict=True):
        start = text.index(line, pos)
        spans.append(Span(node=node, start=start, end=start + len(line)))
        pos = start + len(line)
    Span.objects.bulk_create(spans)
    Edge.objects.bulk_create(
        Edge(contract=contract, source=a, target=b, kind="enables", position=i)
        for i, (a, b) in enumerate(zip(nodes, nodes[1:], strict=False))
    )
    return user, contract, nodes


def timed(call, repeat: int, *, warm: bool = True) -> tuple[float, float, float, float, int]:
    """Median wall and CPU seconds of ``call()``, the least and most CPU seconds, and
    the size of its last response."""
    if warm:
        call()
    walls, cpus, size = [], [], 0
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        response = call()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        assert response.status_code in (200, 302), response.status_code
        size = len(response.content)
    return statistics.median(walls), statistics.median(cpus), min(cpus), max(cpus), size


def run(n_nodes: int, repeat: int) -> list[tuple[str, float, float, float, float, int]]:
    from django.core.cache import cache
    from django.test import Client

    from audit.models import Node

    user, contract, nodes = build(n_nodes)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    proposed = iter([n for n in nodes if n.review_status == "proposed"])
    base = f"/c/{contract.pk}"

    def review(action):
        node = Node.objects.get(pk=next(proposed).pk)
        data = {"action": action, "version": node.version, "advance": "1"}
        return client.post(f"{base}/nodes/{node.pk}/review/", data, **HTMX)

    def bulk():
        batch = [next(proposed) for _ in range(100)]
        refs = [f"{n.pk}:{Node.objects.get(pk=n.pk).version}" for n in batch]
        return client.post(f"{base}/reviews/", {"action": "confirm", "node": refs}, **HTMX)

    rows = []
    mid = nodes[len(nodes) // 2]  # the page and the panel open the same node
    page = f"{base}/?node={mid.node_id}"
    cache.clear()
    cold = timed(lambda: client.get(page), 1, warm=False)
    rows.append(("workspace page, cold (audit not cached)", *cold))
    rows.append(("workspace page", *timed(lambda: client.get(page), repeat)))
    panel = f"{base}/nodes/{mid.pk}/"
    rows.append(("node panel (htmx)", *timed(lambda: client.get(panel, **HTMX), repeat)))
    rows.append(("confirm + open next (htmx)", *timed(lambda: review("confirm"), repeat)))
    rows.append(("reject + open next (htmx)", *timed(lambda: review("reject"), repeat)))
    rows.append(("bulk confirm of 100 nodes (htmx)", *timed(bulk, 3)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-workspace.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        setup(Path(tmp) / "bench.sqlite3")
        rows = run(args.nodes, args.repeat)
    body = [f"{args.nodes} nodes; median of {args.repeat} requests (bulk: of 3).", ""]
    body += doc.table(
        ["request", "CPU ms (range)", "wall ms", "KB", "target"],
        [
            [
                name,
                f"{cpu * 1000:.1f} ({low * 1000:.1f}–{high * 1000:.1f})",
                f"{wall * 1000:.1f}",
                f"{size / 1024:.1f}",
                _verdict(name, cpu, size),
            ]
            for name, wall, cpu, low, high, size in rows
        ],
    )
    print("\n".join(body))
    if args.doc:
        doc.write(
            "workspace",
            title=f"the audit workspace at {args.nodes:,} nodes",
            command=f"make bench-workspace (scripts/bench_workspace.py --nodes {args.nodes}"
            f" --repeat {args.repeat} --doc)",
            method=METHOD,
            machine_line=doc.machine(load=load),
            body=body,
        )


def _verdict(name: str, cpu: float, size: int) -> str:
    """The row's target and whether the median met it ("" for a row without one)."""
    if name not in TARGETS:
        return ""
    ms, kb = TARGETS[name]
    bar = f"≤ {ms} ms" + (f", ≤ {kb} KB" if kb else "")
    met = cpu * 1000 <= ms and (kb is None or size / 1024 <= kb)
    return f"{bar}: {'met' if met else 'not met'}"


if __name__ == "__main__":
    main()
