"""CPU time the web process spends per request, route by route, on the seeded database.

On a shared machine the load test's wall times measure the queue for a CPU, not the
app; this measures what one request costs the Django process (``time.process_time``)
and its wall time when it runs alone, 20 requests per route after one warm-up, through
the test client (no network, same middleware, session and token auth).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/contracteval_bench \\
        python bench/request_cpu.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")


def measure(call, n: int = 20) -> tuple[float, float, float]:
    """Median CPU ms, median wall ms and p95 wall ms of ``n`` calls (after one warm-up)."""
    call()
    cpu, wall = [], []
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter()
        response = call()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        assert response.status_code in (200, 201, 302), response.status_code
    wall.sort()
    return statistics.median(cpu), statistics.median(wall), wall[int(0.95 * (n - 1))]


def main() -> int:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.test import APIClient

    from audit.models import Contract, Run

    user = get_user_model().objects.get(username="reviewer")
    ui = Client(HTTP_HOST="127.0.0.1")
    ui.force_login(user)
    api = APIClient(HTTP_HOST="127.0.0.1")
    api.force_authenticate(user)
    run = Run.objects.filter(status="done").order_by("-pk").first()
    contract = Contract.objects.filter(key="refund-mini", status="audited").latest("version")
    observed = json.loads((ROOT / "matching" / "data" / "refund-mini-observed-q1.json").read_text())
    counter = [0]

    def create():
        counter[0] += 1
        doc = json.loads(json.dumps(observed))
        doc["source"]["text"] += f"\n[assistant] cpu bench {time.time_ns()} {counter[0]}"
        body = {"contract": contract.pk, "query": "q1", "input_kind": "observed", "input": doc}
        return api.post("/api/runs/", body, format="json")

    routes = {
        "runs page": lambda: ui.get("/p/demo/runs/"),
        "runs page verdict=non_clean": lambda: ui.get("/p/demo/runs/?verdict=non_clean"),
        "inbox": lambda: ui.get("/p/demo/inbox/"),
        "inbox family=omission": lambda: ui.get("/p/demo/inbox/?family=omission"),
        "run page": lambda: ui.get(f"/r/{run.pk}/"),
        "run status poll": lambda: ui.get(f"/r/{run.pk}/status/"),
        "api runs": lambda: api.get("/api/runs/?project=demo"),
        "api runs verdict=non_clean": lambda: api.get("/api/runs/?project=demo&verdict=non_clean"),
        "api run": lambda: api.get(f"/api/runs/{run.pk}/"),
        "api create run (queued)": create,
    }
    print(f"{'route':<30} {'cpu ms':>8} {'wall ms':>8} {'p95 wall':>9}")
    for name, call in routes.items():
        cpu, wall, p95 = measure(call)
        print(f"{name:<30} {cpu:8.1f} {wall:8.1f} {p95:9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
