"""Reviewer-taught enactments: pairing and unpairing a run's steps makes a corrected
report the run's, with the automatic one kept, each confirmed pairing becomes an enactment of the
contract (listed, removable by an annotator, exported), and the next semantic-mode run
of a similar trace pairs the step on its own."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from audit.models import AuditRecord, Enactment, Run, RunCorrection

pytestmark = pytest.mark.django_db

TRACE = """[user] Hi, I'd like a refund for order {order} please, it arrived {days} days ago.
[tool] lookup_order(order_id="{order}")
[result] {{"order_id": "{order}", "email": "sam@example.com", "total": 59.00}}
[assistant] The email on order {order} matches the one you wrote from, so I can confirm the purchase is yours.
[assistant] {Days} days is nothing, we are good there.
[tool] issue_refund(order_id="{order}", amount=59.00, to="original_payment")
[result] {{"refund_id": "RF-88", "status": "approved"}}
[assistant] Your refund of $59.00 is approved and should arrive within 5 business days.
"""
# The window check worded so loosely that semantic mode cannot tell it enacts the check:
# it leaves the check unpaired, or pairs it with doubt (a weak pairing): the case a
# reviewer's correction is for.
STEP = "Ten days is nothing, we are good there."


def _run(client, audited, capture, *, order="1042", days="ten", mode="semantic") -> Run:
    text = TRACE.format(order=order, days=days, Days=days.capitalize())
    form = {
        "target": f"{audited.pk}|q1",
        "input_kind": "text",
        "text": text,
        "source_kind": "trace",
        "mode": mode,
        "extractor": "behaviour",
    }
    with capture(execute=True):
        r = client.post("/p/tests/runs/new/", form)
    assert r.status_code == 302
    run = Run.objects.order_by("-pk").first()
    assert run is not None and run.status == "done", run and run.error
    return run


def _step_of(run: Run, text: str) -> str:
    trace = run.overlay["trace"]["text"]
    for o in run.overlay["observed"]:
        if any(text in trace[s["start"] : s["end"]] for s in o["spans"]):
            return o["id"]
    raise AssertionError(f"no step says {text!r}")


def _families(report: dict) -> set[tuple[str, str]]:
    return {(f["family"], f["location"]) for f in report["failures"]}


def _in_doubt(report: dict, node: str) -> bool:
    """The obligation is reported omitted, or paired with a probability below 0.6."""
    scores = {a["expected"]: a["score"] for a in report["alignment"]}
    return ("omission", node) in _families(report) or scores.get(node, 0.0) < 0.6


def test_pairing_stores_a_corrected_report_with_who_and_when_and_teaches_an_enactment(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    step = _step_of(run, STEP)
    automatic = run.report
    r = client.post(f"/r/{run.pk}/pair/", {"observed": step, "expected": "check_window"})
    assert r.status_code == 302
    fix = RunCorrection.objects.get(run=run)
    assert fix.reviewer.username == "reviewer" and fix.created_at is not None
    assert ("omission", "check_window") not in _families(fix.report)
    assert ("extra_action", step) not in _families(fix.report)
    run.refresh_from_db()  # the corrected report is the run's; the automatic one is kept
    assert run.report == fix.report and run.automatic["report"] == automatic
    e = Enactment.objects.get()
    assert (e.node_id, e.text, e.run_id, e.step_id) == ("check_window", STEP, run.pk, step)
    assert e.reviewer.username == "reviewer"
    page = client.get(f"/r/{run.pk}/").content.decode()
    assert 'data-testid="corrected-report"' in page and ">reviewer</strong>" in page
    assert 'data-testid="weak-count"' in page


def test_unpairing_refuses_a_pairing_and_teaches_nothing(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    r = client.post(f"/r/{run.pk}/unpair/", {"expected": "verify_owner"})
    assert r.status_code == 302
    fix = RunCorrection.objects.get(run=run)
    assert fix.corrections["unpair"] == [["verify_owner", paired["verify_owner"]]]
    assert ("extra_action", paired["verify_owner"]) in _families(fix.report)
    assert not Enactment.objects.exists()
    assert AuditRecord.objects.filter(action="unpair", object_id=str(run.pk)).exists()


def test_annotators_cannot_pair_and_bad_pairs_store_nothing(
    audited, login, django_capture_on_commit_callbacks
):
    run = _run(login("annotator"), audited, django_capture_on_commit_callbacks)
    assert (
        login("annotator")
        .post(f"/r/{run.pk}/pair/", {"observed": "o1", "expected": "check_window"})
        .status_code
        == 403
    )
    assert (
        login("outsider")
        .post(f"/r/{run.pk}/pair/", {"observed": "o1", "expected": "check_window"})
        .status_code
        == 404
    )
    client = login("reviewer")
    r = client.post(
        f"/r/{run.pk}/pair/", {"observed": "o99", "expected": "check_window"}, follow=True
    )
    assert "&#x27;o99&#x27; is not an observed step" in r.content.decode()
    assert not RunCorrection.objects.exists() and not Enactment.objects.exists()


def test_an_annotator_removes_a_taught_enactment_and_the_export_lists_the_others(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    client.post(f"/r/{run.pk}/pair/", {"observed": _step_of(run, STEP), "expected": "check_window"})
    doc = json.loads(client.get(f"/c/{audited.pk}/export.json").content)
    node = next(n for n in doc["nodes"] if n["id"] == "check_window")
    assert STEP in node["meta"]["enactment"]
    assert node["meta"]["taught_enactments"][0]["run"] == run.pk
    e = Enactment.objects.get()
    page = login("annotator").get(f"/c/{audited.pk}/").content.decode()
    assert 'data-testid="enactment"' in page and STEP in page
    r = login("annotator").post(f"/c/{audited.pk}/enactments/{e.pk}/delete/")
    assert r.status_code == 302 and not Enactment.objects.exists()
    doc = json.loads(client.get(f"/c/{audited.pk}/export.json").content)
    node = next(n for n in doc["nodes"] if n["id"] == "check_window")
    assert STEP not in node["meta"].get("enactment", [])


def test_a_corrected_pairing_makes_the_next_semantic_run_of_a_similar_trace_pair_it(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    first = _run(client, audited, django_capture_on_commit_callbacks)
    client.post(
        f"/r/{first.pk}/pair/", {"observed": _step_of(first, STEP), "expected": "check_window"}
    )
    later = _run(client, audited, django_capture_on_commit_callbacks, order="2077", days="twelve")
    paired = {a["expected"]: a["observed"] for a in later.report["alignment"]}
    assert paired.get("check_window") == _step_of(later, "Twelve days is nothing")
    assert not _in_doubt(later.report, "check_window")
    # token mode reads the spec literally: no enactments
    token = _run(
        client,
        audited,
        django_capture_on_commit_callbacks,
        order="3031",
        days="twelve",
        mode="token",
    )
    assert ("omission", "check_window") in _families(token.report)


def test_the_same_trace_run_again_after_teaching_is_a_new_run_that_reads_the_enactment(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    first = _run(client, audited, django_capture_on_commit_callbacks)
    client.post(
        f"/r/{first.pk}/pair/", {"observed": _step_of(first, STEP), "expected": "check_window"}
    )
    again = _run(client, audited, django_capture_on_commit_callbacks)
    assert again.pk != first.pk
    assert not _in_doubt(again.report, "check_window")


def test_the_run_graph_offers_pairing_to_reviewers_through_the_correction_forms(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks, mode="token")
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    page = client.get(f"/r/{run.pk}/").content.decode()
    assert 'data-contracteval-overlay="overlay-data" data-teach="correction"' in page
    assert 'id="correction"' in page and 'data-testid="pair-form"' in page
    assert (
        f'data-testid="unpair-form" data-expected="verify_owner"'
        f' data-observed="{paired["verify_owner"]}"'
    ) in page
    page = login("annotator").get(f"/r/{run.pk}/").content.decode()
    assert "data-teach=" not in page and 'data-testid="unpair-form"' not in page


def test_a_correction_becomes_the_runs_report_in_the_headline_inbox_api_and_export(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    before = (run.verdict, run.failure_count)
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    r = client.post(f"/r/{run.pk}/unpair/", {"expected": "verify_owner"})
    assert r.status_code == 302
    run.refresh_from_db()
    assert run.verdict == "non_clean" and ("extra_action", paired["verify_owner"]) in _families(
        run.report
    )
    assert (run.automatic["verdict"], run.automatic["failure_count"]) == before
    assert run.n_extra_action == sum(f["family"] == "extra_action" for f in run.report["failures"])
    page = client.get(f"/r/{run.pk}/").content.decode()
    assert 'data-testid="run-corrected"' in page and 'data-testid="automatic-verdict"' in page
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["verdict"] == "non_clean" and api["failure_count"] == run.failure_count
    exported = json.loads(client.get(f"/r/{run.pk}/export.json").content)
    assert exported["corrected"] is True and exported["automatic"]["verdict"] == before[0]
    inbox = client.get("/p/tests/inbox/").content.decode()
    assert f"/r/{run.pk}/" in inbox
    assert exported["report"]["failures"] == run.report["failures"]


def test_many_decisions_at_once_and_a_step_read_as_commentary_and_a_revert(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    automatic = run.report
    step = _step_of(run, STEP)
    paired = {a["expected"]: a["observed"] for a in run.report["alignment"]}
    form = {f"pair-{step}": "check_window", "unpair": ["verify_owner"]}
    form["commentary"] = [paired["verify_owner"]]
    r = client.post(f"/r/{run.pk}/correct/", form, HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    body = r.content.decode()
    assert body.lstrip().startswith('<div id="run-reading"') and "<html" not in body
    assert 'data-testid="correction-message"' in body
    run.refresh_from_db()
    fix = RunCorrection.objects.get(run=run)
    assert fix.corrections["commentary"] == [paired["verify_owner"]]
    assert [tuple(p) for p in fix.corrections["pair"]] == [("check_window", step)]
    families = _families(run.report)
    assert ("extra_action", paired["verify_owner"]) not in families
    assert ("omission", "verify_owner") in families
    assert {"id": paired["verify_owner"], "reason": "commentary, by a reviewer"} in run.report[
        "dropped_observed"
    ]
    assert AuditRecord.objects.filter(action="correct", object_id=str(run.pk)).exists()
    r = client.post(f"/r/{run.pk}/revert/", HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    run.refresh_from_db()
    assert run.report == automatic and run.automatic is None
    assert RunCorrection.objects.filter(run=run).count() == 2
    again = client.post(f"/r/{run.pk}/revert/", HTTP_HX_REQUEST="true")
    assert again.status_code == 400 and "no correction to revert" in again.content.decode()


def test_an_empty_or_bad_correction_is_refused_by_name_and_stores_nothing(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks)
    r = client.post(f"/r/{run.pk}/correct/", {}, HTTP_HX_REQUEST="true")
    assert r.status_code == 400 and "choose a step" in r.content.decode()
    r = client.post(f"/r/{run.pk}/correct/", {"commentary": ["o99"]}, HTTP_HX_REQUEST="true")
    assert r.status_code == 400 and "&#x27;o99&#x27; is not an observed step" in r.content.decode()
    run.refresh_from_db()
    assert run.automatic is None and not RunCorrection.objects.exists()
    assert (
        login("annotator").post(f"/r/{run.pk}/correct/", {"commentary": ["o1"]}).status_code == 403
    )
    assert login("outsider").post(f"/r/{run.pk}/revert/").status_code == 404
    assert client.get(f"/r/{run.pk}/correct/").status_code in (302, 405)


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_correcting_at_once_both_keep_their_decisions(
    audited, login, django_capture_on_commit_callbacks
):
    run = _run(login("reviewer"), audited, django_capture_on_commit_callbacks, mode="token")
    steps = [o["id"] for o in run.overlay["observed"]][:2]
    clients = [login("reviewer"), login("reviewer")]
    statuses: list[int] = []
    barrier = threading.Barrier(2)

    def correct(i: int) -> None:
        barrier.wait()
        r = clients[i].post(
            f"/r/{run.pk}/correct/", {"commentary": [steps[i]]}, HTTP_HX_REQUEST="true"
        )
        statuses.append(r.status_code)
        connection.close()

    threads = [threading.Thread(target=correct, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200, 200]
    run.refresh_from_db()
    latest = RunCorrection.objects.filter(run=run).first()
    assert latest is not None and sorted(latest.corrections["commentary"]) == sorted(steps)
    assert RunCorrection.objects.filter(run=run).count() == 2
    dropped = {d["id"] for d in run.report["dropped_observed"]}
    assert set(steps) <= dropped


def test_a_correction_is_offered_for_the_same_steps_of_other_runs_and_applied_when_ticked(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    capture = django_capture_on_commit_callbacks
    first, second, third = (
        _run(client, audited, capture, order=order, mode="token")
        for order in ("1042", "2077", "3100")
    )
    step = _step_of(first, STEP)
    assert client.post(f"/r/{first.pk}/pair/", {"observed": step, "expected": "check_window"})
    page = client.get(f"/r/{first.pk}/similar/").content.decode()
    assert page.count('data-testid="similar-row"') == 2
    values = [f"{r.pk}|pair|check_window|{_step_of(r, STEP)}" for r in (second, third)]
    assert all(f'value="{v}"' in page for v in values)
    r = client.post(f"/r/{first.pk}/similar/", {"apply": values[:1]}, follow=True)
    assert "1 other run corrected." in r.content.decode()
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.is_corrected and not third.is_corrected
    assert ("omission", "check_window") not in _families(second.report)
    fix = RunCorrection.objects.get(run=second)
    assert fix.reviewer.username == "reviewer"
    # what is already read that way is offered no more
    page = client.get(f"/r/{first.pk}/similar/").content.decode()
    assert page.count('data-testid="similar-row"') == 1 and f'value="{values[1]}"' in page


def test_similar_corrections_refuse_tampered_choices_and_outsiders(
    audited, login, django_capture_on_commit_callbacks
):
    client = login("reviewer")
    run = _run(client, audited, django_capture_on_commit_callbacks, mode="token")
    r = client.post(f"/r/{run.pk}/similar/", {"apply": ["x|pair|a|b"]}, follow=True)
    assert "&#x27;x|pair|a|b&#x27; is not a suggestion of this page" in r.content.decode()
    r = client.post(f"/r/{run.pk}/similar/", {"apply": ["999999|commentary||o1"]}, follow=True)
    assert "run 999999 is not a run of this contract" in r.content.decode()
    assert not RunCorrection.objects.exists()
    assert login("annotator").get(f"/r/{run.pk}/similar/").status_code == 403
    assert login("outsider").get(f"/r/{run.pk}/similar/").status_code == 404
    page = login("reviewer").get(f"/r/{run.pk}/similar/").content.decode()
    assert 'data-testid="similar-none"' in page and "this run has no correction" in page
