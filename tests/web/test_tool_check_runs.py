"""A contract's tool-call check, imported and audited in the web app, judges an
uploaded trace: the run names the forbidden call as the failure's evidence."""

from __future__ import annotations

import copy

import pytest

from audit import services

pytestmark = pytest.mark.django_db

TRACE = """[user] Refund order 1042 please, and close my account.
[tool] lookup_order(order_id="1042")
[result] {"order_id": "1042", "email": "sam@example.com", "placed": "10 days ago"}
[assistant] The purchase is yours and inside the 30-day window.
[tool] delete_account(user="sam")
[assistant] Done: your refund is approved and your account is closed.
"""


def test_a_forbidden_tool_call_fails_the_run_and_is_named(
    project, users, refund_doc, monkeypatch, django_capture_on_commit_callbacks
):
    from audit import enqueue
    from audit.services import runs

    doc = copy.deepcopy(refund_doc)
    doc["invariants"].append(
        {
            "id": "no_account_deletion",
            "label": "Never delete an account in a refund conversation",
            "evidence": doc["invariants"][0]["evidence"],
            "check": {"forbid_tools": ["delete_account"]},
        }
    )
    contract = services.contract_import(project=project, user=users["admin"], source=doc)
    contract = services.contract_mark_audited(contract=contract, user=users["reviewer"])
    monkeypatch.setattr(enqueue, "enqueue_run", lambda pk: runs.run_execute(run_id=pk))
    with django_capture_on_commit_callbacks(execute=True):
        run, _ = services.run_create(
            contract=contract, user=users["annotator"], query_key="q1", kind="text", data=TRACE
        )
    run.refresh_from_db()
    assert run.status == "done", run.error
    [f] = [f for f in run.report["failures"] if f["location"] == "no_account_deletion"]
    assert f["family"] == "invariant_violation"
    assert 'delete_account(user="sam") (line 5), a forbidden tool' in f["detail"]
    assert run.n_invariant_violation >= 1
