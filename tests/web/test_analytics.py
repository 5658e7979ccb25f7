"""Compliance analytics: rates per obligation on known runs, the filters, the comparison
of two agent versions with its 95% interval, the CSV and SVG downloads, the API giving
the page's numbers, access for members only, and escaping."""

from __future__ import annotations

import copy
import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from audit import services
from audit.management.commands.load_demo import observed_variant, runs_in_process
from audit.models import Run, RunOutcome
from audit.selectors.analytics import newcombe, wilson

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}

# (agent version, model, variant, runs, days ago)
PLAN = [
    ("1.0", "model-a", {}, 6, 10),
    ("1.0", "model-a", {"drop": ("o2",)}, 2, 10),
    ("2.0", "model-b", {}, 2, 2),
    ("2.0", "model-b", {"drop": ("o2",)}, 6, 2),
    ("2.0", "model-b", {"swap": ("o2", "o4")}, 2, 1),
]


@pytest.fixture
def runs(audited, users, observed_doc):
    """18 finished oracle runs of q1: version 1.0 misses verify_owner in 2 of 8 runs,
    version 2.0 in 6 of 10 and does it out of order (approve before verify) in 2."""
    ref, now, created = 0, timezone.now(), []
    with runs_in_process():
        for version, model, variant, count, days in PLAN:
            for _ in range(count):
                run, _ = services.run_create(
                    contract=audited,
                    user=users["annotator"],
                    query_key="q1",
                    kind="observed",
                    data=observed_variant(observed_doc, ref=ref, **variant),
                    mode="oracle",
                    model_name=model,
                    agent_version=version,
                )
                Run.objects.filter(pk=run.pk).update(created_at=now - timedelta(days=days))
                created.append(run.pk)
                ref += 1
    for run_id in created:
        services.run_execute(run_id=run_id)
    return audited


def _rows(response) -> dict[str, dict]:
    return {r["node"]: r for r in response.json()["obligations"]}


def test_the_outcome_of_every_obligation_is_stored_when_a_run_finishes(runs):
    outcomes = RunOutcome.objects.filter(agent_version="2.0").values_list("obligations", flat=True)
    verify = sorted(o["verify_owner"] for o in outcomes)
    assert verify == ["m"] * 4 + ["x"] * 6  # the swapped runs did verify, late only
    late = [o for o in outcomes if o["approve_refund"] == "o"]
    assert len(late) == 2 and all("outside_window" not in o for o in outcomes)


def test_rates_per_obligation_on_known_runs(client, users, runs):
    client.force_login(users["annotator"])
    rows = _rows(client.get(f"/api/contracts/{runs.pk}/analytics/"))
    verify, approve, outside = rows["verify_owner"], rows["approve_refund"], rows["outside_window"]
    assert (verify["n"], verify["met"], verify["missed"], verify["out_of_order"]) == (18, 10, 8, 0)
    assert verify["missed_rate"] == pytest.approx(8 / 18)
    assert (approve["met"], approve["out_of_order"], approve["missed"]) == (16, 2, 0)
    assert approve["out_of_order_rate"] == pytest.approx(2 / 18)
    assert (outside["n_a"], outside["n_a_rate"]) == (18, 1.0)  # the unchosen branch
    for r in rows.values():
        assert r["met"] + r["missed"] + r["out_of_order"] + r["n_a"] == r["n"] == 18


def test_filters_by_version_model_and_dates(client, users, runs):
    client.force_login(users["reviewer"])
    base = f"/api/contracts/{runs.pk}/analytics/"
    assert client.get(base, {"agent_version": "1.0"}).json()["runs"] == 8
    assert client.get(base, {"model": "model-b"}).json()["runs"] == 10
    today = timezone.localdate()
    since = (today - timedelta(days=3)).isoformat()
    assert client.get(base, {"since": since}).json()["runs"] == 10
    until = (today - timedelta(days=5)).isoformat()
    assert client.get(base, {"until": until}).json()["runs"] == 8
    assert client.get(base, {"agent_version": "1.0", "since": since}).json()["runs"] == 0
    assert client.get(base, {"since": "not a day"}).status_code == 400
    assert client.get(base, {"until": "9999-12-31", "since": "0001-01-01"}).json()["runs"] == 18


def test_the_trend_counts_clean_runs_per_day_and_week(client, users, runs):
    client.force_login(users["annotator"])
    days = client.get(f"/api/contracts/{runs.pk}/analytics/").json()["trend"]
    assert [(d["runs"], d["clean"]) for d in days] == [(8, 6), (8, 2), (2, 0)]
    assert days[0]["clean_share"] == pytest.approx(0.75)
    weeks = client.get(f"/api/contracts/{runs.pk}/analytics/", {"bucket": "week"}).json()
    assert sum(w["runs"] for w in weeks["trend"]) == 18 and weeks["bucket"] == "week"


def test_wilson_and_newcombe_match_the_published_examples():
    # Newcombe (1998), Statistics in Medicine 17:873, table II, method 10
    assert newcombe(56, 70, 48, 80) == pytest.approx((0.0524, 0.3339), abs=1e-4)
    assert newcombe(9, 10, 3, 10) == pytest.approx((0.1705, 0.8090), abs=1e-4)
    assert newcombe(5, 56, 0, 29) == pytest.approx((-0.0381, 0.1926), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert newcombe(1, 0, 1, 5) is None


def test_compare_flags_a_regression_where_the_interval_excludes_zero(client, users, runs):
    client.force_login(users["annotator"])
    url = f"/api/contracts/{runs.pk}/analytics/compare/"
    result = client.get(url, {"a": "1.0", "b": "2.0"}).json()
    assert (result["a"]["runs"], result["b"]["runs"]) == (8, 10)
    rows = {r["node"]: r for r in result["obligations"]}
    verify = rows["verify_owner"]
    assert (verify["a_missed"], verify["b_missed"]) == (2, 6)
    assert verify["difference"] == pytest.approx(0.6 - 0.25)
    assert (verify["low"], verify["high"]) == pytest.approx(newcombe(6, 10, 2, 8))
    assert verify["low"] < 0 < verify["high"] and verify["flag"] == ""  # 8 and 10 runs: unsure
    assert rows["lookup_order"]["difference"] == 0 and rows["lookup_order"]["flag"] == ""
    assert result["violation"]["b_missed"] == 8 and result["violation"]["a_missed"] == 2
    swapped = client.get(url, {"a": "2.0", "b": "1.0"}).json()
    assert swapped["violation"]["difference"] == pytest.approx(-result["violation"]["difference"])
    by_model = client.get(url, {"by": "model", "a": "model-a", "b": "model-b"}).json()
    assert by_model["obligations"] == result["obligations"]
    assert client.get(url, {"a": "1.0", "b": "1.0"}).status_code == 400
    assert client.get(url, {"a": "1.0"}).status_code == 400


def test_compare_flags_a_clear_regression(audited, users, observed_doc):
    ref, created = 0, []
    with runs_in_process():
        for version, misses in (("old", 0), ("new", 20)):
            for i in range(20):
                variant = {"drop": ("o2",)} if i < misses else {}
                run, _ = services.run_create(
                    contract=audited, user=users["annotator"], query_key="q1", kind="observed",
                    data=observed_variant(observed_doc, ref=ref, **variant), mode="oracle",
                    agent_version=version,
                )  # fmt: skip
                created.append(run.pk)
                ref += 1
    for run_id in created:
        services.run_execute(run_id=run_id)
    from audit.selectors import analytics

    result = analytics.compare(
        audited, analytics.finished_runs(audited), "agent_version", "old", "new"
    )
    rows = {r["node"]: r for r in result["obligations"]}
    assert rows["verify_owner"]["flag"] == "regression" and rows["verify_owner"]["low"] > 0.5
    assert rows["lookup_order"]["flag"] == ""


def test_the_page_shows_the_api_numbers_and_its_htmx_partial(client, users, runs):
    client.force_login(users["annotator"])
    api = _rows(client.get(f"/api/contracts/{runs.pk}/analytics/", {"model": "model-b"}))
    page = client.get(f"/c/{runs.pk}/analytics/", {"model": "model-b"})
    body = page.content.decode()
    assert page.status_code == 200 and "<svg" in body and 'data-testid="analytics-table"' in body
    for node, r in api.items():
        row = body.split(f'<tr data-node="{node}">', 1)[1].split("</tr>", 1)[0]
        cells = [f"{100 * r[k]:.0f}%" for k in ("met_rate", "missed_rate", "out_of_order_rate")]
        assert all(c in row for c in cells), (node, row)
    assert "10 finished runs" in body
    partial = client.get(f"/c/{runs.pk}/analytics/", {"model": "model-b"}, **HTMX)
    text = partial.content.decode()
    assert text.lstrip().startswith('<div id="analytics-results"') and "<html" not in text
    assert "hx-get" in body
    for tag in body.split("<")[1:]:  # every hx-get link also works without JavaScript
        if tag.startswith("a ") and "hx-get" in tag:
            assert "href=" in tag


def test_compare_page_table_and_downloads(client, users, runs):
    client.force_login(users["annotator"])
    params = {"a": "1.0", "b": "2.0"}
    page = client.get(f"/c/{runs.pk}/analytics/compare/", params).content.decode()
    assert 'data-testid="compare-table"' in page and "+35 pp" in page
    assert client.get(f"/c/{runs.pk}/analytics/compare/").status_code == 200  # the empty form
    response = client.get(f"/c/{runs.pk}/analytics/compare.csv", params)
    assert (
        response["Content-Type"].startswith("text/csv")
        and "attachment" in response["Content-Disposition"]
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    verify = next(r for r in rows if r["node"] == "verify_owner")
    assert (verify["a_missed"], verify["b_missed"], verify["b_rate"]) == ("2", "6", "0.6000")
    svg = client.get(f"/c/{runs.pk}/analytics/compare.svg", params)
    assert svg["Content-Type"].startswith("image/svg+xml") and b"<svg" in svg.content
    assert client.get(f"/c/{runs.pk}/analytics/compare.csv").status_code == 404  # no A, B


def test_table_and_chart_downloads(client, users, runs):
    client.force_login(users["annotator"])
    table = client.get(f"/c/{runs.pk}/analytics/obligations.csv", {"agent_version": "2.0"})
    rows = {r["node"]: r for r in csv.DictReader(io.StringIO(table.content.decode()))}
    assert (rows["verify_owner"]["missed"], rows["verify_owner"]["n"]) == ("6", "10")
    trend = client.get(f"/c/{runs.pk}/analytics/trend.csv").content.decode().splitlines()
    assert trend[0] == "period,runs,clean,clean_share" and len(trend) == 4
    for part in ("obligations", "trend"):
        svg = client.get(f"/c/{runs.pk}/analytics/{part}.svg")
        assert svg.status_code == 200 and svg.content.startswith(b"<svg xmlns=")
        assert b"<title" in svg.content
    assert client.get(f"/c/{runs.pk}/analytics/obligations.pdf").status_code == 404
    assert client.get(f"/c/{runs.pk}/analytics/secrets.csv").status_code == 404


def test_outsiders_get_404_and_anonymous_users_the_login(client, users, runs, api):
    urls = [
        f"/c/{runs.pk}/analytics/",
        f"/c/{runs.pk}/analytics/compare/?a=1.0&b=2.0",
        f"/c/{runs.pk}/analytics/obligations.csv",
        f"/c/{runs.pk}/analytics/compare.svg?a=1.0&b=2.0",
    ]
    for url in urls:
        assert client.get(url).status_code == 302
    client.force_login(users["outsider"])
    for url in urls:
        assert client.get(url).status_code == 404
    outsider = api("outsider")
    for url in (
        f"/api/contracts/{runs.pk}/analytics/",
        f"/api/contracts/{runs.pk}/analytics/compare/?a=1.0&b=2.0",
    ):
        assert outsider.get(url).status_code == 404
        assert api(None).get(url).status_code in (401, 403)
        assert api("annotator").get(url).status_code == 200


def test_version_and_model_names_and_labels_are_escaped(client, users, audited, observed_doc):
    evil = '<script>alert("v")</script>'
    with runs_in_process():
        run, _ = services.run_create(
            contract=audited, user=users["annotator"], query_key="q1", kind="observed",
            data=observed_doc, mode="oracle", model_name=evil, agent_version=evil + "1",
        )  # fmt: skip
    services.run_execute(run_id=run.pk)
    audited.nodes.filter(node_id="verify_owner").update(label=evil)
    client.force_login(users["annotator"])
    pages = [
        client.get(f"/c/{audited.pk}/analytics/"),
        client.get(f"/c/{audited.pk}/analytics/compare/", {"a": evil + "1", "b": evil}),
        client.get(f"/c/{audited.pk}/analytics/obligations.svg"),
        client.get(f"/c/{audited.pk}/analytics/compare.svg", {"a": evil + "1", "b": evil}),
    ]
    for response in pages:
        assert response.status_code == 200
        assert b"<script>alert" not in response.content
        assert b"&lt;script&gt;" in response.content
    text = client.get(f"/c/{audited.pk}/analytics/obligations.csv").content.decode()
    labels = [r["label"] for r in csv.DictReader(io.StringIO(text))]
    assert evil in labels  # CSV carries the text as it is (a spreadsheet does not run it)


def test_api_run_creation_and_the_run_export_carry_the_agent_version(users, api, audited):
    body = {
        "contract": audited.pk,
        "query": "q1",
        "input_kind": "tau_bench",
        "input": [{"name": "lookup_order", "kwargs": {"order_id": "1042"}}],
        "model": "m",
        "agent_version": "3.1.4",
    }
    response = api("annotator").post("/api/runs/", body, format="json")
    assert response.status_code == 201 and response.json()["agent_version"] == "3.1.4"
    run = Run.objects.get()
    assert run.agent_version == "3.1.4"
    export = api("annotator").get(f"/api/runs/{run.pk}/export/").json()
    assert export["agent_version"] == "3.1.4"
    assert (
        json.loads(json.dumps(api("annotator").get("/api/runs/?agent_version=3.1.4").json()))[
            "results"
        ][0]["id"]
        == run.pk
    )


def test_a_correction_and_its_revert_keep_the_analytics_in_step(audited, users, observed_doc):
    with runs_in_process():
        run, _ = services.run_create(
            contract=audited, user=users["annotator"], query_key="q1", kind="observed",
            data=observed_doc, mode="token", agent_version="1.0",
        )  # fmt: skip
    run = services.run_execute(run_id=run.pk)
    assert RunOutcome.objects.get(run=run).obligations["verify_owner"] == "m"
    services.run_unpair(run=run, user=users["reviewer"], expected_id="verify_owner")
    outcome = RunOutcome.objects.get(run=run)
    assert outcome.obligations["verify_owner"] == "x" and not outcome.is_clean
    services.run_revert(run=Run.objects.get(pk=run.pk), user=users["reviewer"])
    assert RunOutcome.objects.get(run=run).obligations["verify_owner"] == "m"
    Run.objects.filter(pk=run.pk).update(status="failed")
    services.run_outcome_record(run=Run.objects.get(pk=run.pk))
    assert not RunOutcome.objects.filter(run=run).exists()


def test_the_migration_fills_the_analytics_of_runs_read_before_it(runs):
    from importlib import import_module

    from django.apps import apps

    before = {o.run_id: (o.obligations, o.is_clean) for o in RunOutcome.objects.all()}
    RunOutcome.objects.all().delete()
    import_module("audit.migrations.0019_run_agent_version").fill_outcomes(apps, None)
    after = {o.run_id: (o.obligations, o.is_clean) for o in RunOutcome.objects.all()}
    assert after == before and len(after) == 18


def test_the_schema_documents_both_analytics_endpoints_and_their_parameters(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    params = {
        path: {p["name"] for p in schema["paths"][path]["get"]["parameters"]}
        for path in ("/api/contracts/{id}/analytics/", "/api/contracts/{id}/analytics/compare/")
    }
    assert {"agent_version", "model", "since", "until", "bucket"} <= params[
        "/api/contracts/{id}/analytics/"
    ]
    assert {"a", "b", "by", "since"} <= params["/api/contracts/{id}/analytics/compare/"]


def test_an_obligation_conditional_on_an_action_never_taken_counts_as_not_applicable(
    client, project, users, refund_doc, observed_doc
):
    # "confirm the outcome" applies only once a refund is approved: 3 runs approve, 2 do not
    doc = copy.deepcopy(refund_doc)
    confirm = next(n for n in doc["nodes"] if n["id"] == "confirm_outcome")
    confirm["meta"] = {"applies_if_action": "approve_refund"}
    imported = services.contract_import(project=project, user=users["admin"], source=doc)
    audited = services.contract_mark_audited(contract=imported, user=users["reviewer"])
    created = []
    with runs_in_process():
        for ref, drop in enumerate([(), (), (), ("o4",), ("o4",)]):
            run, _ = services.run_create(
                contract=audited,
                user=users["annotator"],
                query_key="q1",
                kind="observed",
                data=observed_variant(observed_doc, ref=ref, drop=drop),
                mode="oracle",
            )
            created.append(run.pk)
    for run_id in created:
        services.run_execute(run_id=run_id)
    client.force_login(users["annotator"])
    rows = _rows(client.get(f"/api/contracts/{audited.pk}/analytics/"))
    confirm_row, approve = rows["confirm_outcome"], rows["approve_refund"]
    assert (confirm_row["met"], confirm_row["missed"], confirm_row["n_a"]) == (3, 0, 2)
    assert (approve["met"], approve["missed"]) == (3, 2)
