"""Load test of the web app: what reviewers do all day, at ``LOADTEST_USERS`` users.

Run by ``make loadtest`` (``bench/loadtest.py``) against ``make serve`` on PostgreSQL
with 100,000 seeded runs (``bench/seed_runs.py``). Each simulated user is the reviewer:
in the UI with a session made by the runner (``LOADTEST_SESSION``; without one it
signs in through the login form, whose deliberately slow password hash would then
dominate the first seconds), in the API with the reviewer's token
(``LOADTEST_TOKEN``), with a think time of 0.5-1.5 s between requests:

- reads: the runs list (plain and filtered), the inbox (plain and filtered), a run's
  page, ``/api/runs/`` (plain and filtered), ``/api/runs/{id}/``, a run's status poll
  (as htmx sends it);
- writes: ``POST /api/runs/`` with a new trace each time (a new run, queued for the
  worker), about one request in eight.

Requests are named by route, not by URL, so the figures group per endpoint; every
name of a read starts with ``read``, the run creation is ``create run``.
"""

from __future__ import annotations

import json
import os
import random
import re
import uuid
from pathlib import Path

from locust import HttpUser, between, events, task

ROOT = Path(__file__).resolve().parents[1]
PROJECT = os.environ.get("LOADTEST_PROJECT", "demo")
TOKEN = os.environ.get("LOADTEST_TOKEN", "")
SESSION = os.environ.get("LOADTEST_SESSION", "")
USERNAME = os.environ.get("LOADTEST_USERNAME", "reviewer")
PASSWORD = os.environ.get("LOADTEST_PASSWORD", "review-demo")
CONTRACT = int(os.environ.get("LOADTEST_CONTRACT", "0"))
OBSERVED = json.loads((ROOT / "matching" / "data" / "refund-mini-observed-q1.json").read_text())
FILTERS = [
    "verdict=non_clean",
    "verdict=clean",
    "family=omission",
    "status=failed",
    "reviewed=no",
    "model=gpt-4o",
]
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
# Every response time (ms) and whether it failed, by group ("read", "create run"), so the
# runner can give exact percentiles over all reads together (locust's CSV is per name).
SAMPLES: dict[str, list[tuple[float, bool]]] = {}


@events.request.add_listener
def _record(name: str, response_time: float, exception=None, **_kwargs) -> None:
    group = "read" if name.startswith("read") else name
    SAMPLES.setdefault(group, []).append((response_time, exception is not None))


@events.quitting.add_listener
def _dump(**_kwargs) -> None:
    out = os.environ.get("LOADTEST_SAMPLES")
    if out:
        Path(out).write_text(json.dumps(SAMPLES))


class Reviewer(HttpUser):
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        if SESSION:
            self.client.cookies.set("sessionid", SESSION)
        else:
            self._sign_in()
        self.api = {"Authorization": f"Token {TOKEN}"}
        self.run_ids: list[int] = []
        listing = self.client.get(
            f"/api/runs/?project={PROJECT}", headers=self.api, name="read api runs"
        )
        if listing.ok:
            self.run_ids = [r["id"] for r in listing.json()["results"]]

    def _sign_in(self) -> None:
        page = self.client.get("/login/", name="login form")
        match = CSRF.search(page.text)
        self.client.post(
            "/login/",
            {
                "username": USERNAME,
                "password": PASSWORD,
                "csrfmiddlewaretoken": match.group(1) if match else "",
            },
            headers={"Referer": f"{self.host}/login/"},
            name="login",
        )

    def _run_id(self) -> int:
        return random.choice(self.run_ids) if self.run_ids else 1

    @task(3)
    def runs_list(self) -> None:
        self.client.get(f"/p/{PROJECT}/runs/", name="read runs list")

    @task(2)
    def runs_list_filtered(self) -> None:
        self.client.get(
            f"/p/{PROJECT}/runs/?{random.choice(FILTERS)}", name="read runs list filtered"
        )

    @task(3)
    def inbox(self) -> None:
        self.client.get(f"/p/{PROJECT}/inbox/", name="read inbox")

    @task(2)
    def inbox_filtered(self) -> None:
        self.client.get(f"/p/{PROJECT}/inbox/?{random.choice(FILTERS)}", name="read inbox filtered")

    @task(2)
    def run_page(self) -> None:
        self.client.get(f"/r/{self._run_id()}/", name="read run page")

    @task(2)
    def run_status(self) -> None:
        # As htmx polls it (HX-Request): the status partial, or 204 + HX-Redirect once
        # the run is finished. Without the header the view redirects a plain browser to
        # the run page, and the "poll" would measure a whole run page on top.
        self.client.get(
            f"/r/{self._run_id()}/status/",
            headers={"HX-Request": "true"},
            name="read run status poll",
        )

    @task(3)
    def api_runs(self) -> None:
        self.client.get(f"/api/runs/?project={PROJECT}", headers=self.api, name="read api runs")

    @task(2)
    def api_runs_filtered(self) -> None:
        self.client.get(
            f"/api/runs/?project={PROJECT}&{random.choice(FILTERS)}",
            headers=self.api,
            name="read api runs filtered",
        )

    @task(2)
    def api_run(self) -> None:
        self.client.get(f"/api/runs/{self._run_id()}/", headers=self.api, name="read api run")

    @task(3)
    def create_run(self) -> None:
        # A new trace each time, so the run is new (identical inputs return the old run).
        observed = json.loads(json.dumps(OBSERVED))
        observed["source"]["text"] += f"\n[assistant] ticket {uuid.uuid4().hex}"
        body = {
            "contract": CONTRACT,
            "query": "q1",
            "input_kind": "observed",
            "input": observed,
            "mode": "token",
            "extractor": "none",
        }
        with self.client.post(
            "/api/runs/", json=body, headers=self.api, name="create run", catch_response=True
        ) as resp:
            if resp.status_code != 201:
                resp.failure(f"expected 201, got {resp.status_code}: {resp.text[:200]}")
            else:
                self.run_ids.append(resp.json()["id"])
