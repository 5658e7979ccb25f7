"""The notifications API: a user lists their own notifications (the unread first, or
the unread only) and marks one read; nobody sees or marks another's."""

from __future__ import annotations

import pytest

from audit import services
from audit.models import Notification

pytestmark = pytest.mark.django_db


def _mention(contract, users, author: str, body: str) -> None:
    services.comment_create(
        contract=contract, user=users[author], body=body, target="contract", obj=None
    )


@pytest.fixture
def notes(contract, users):
    _mention(contract, users, "annotator", "@reviewer first <b>look</b>")
    _mention(contract, users, "annotator", "@reviewer second, and @admin")
    _mention(contract, users, "admin", "@reviewer third")
    mine = list(Notification.objects.filter(user=users["reviewer"]).order_by("pk"))
    services.notification_mark_read(notification=mine[2], user=users["reviewer"])
    return mine


def test_a_user_lists_their_notifications_the_unread_first(api, notes, contract):
    body = api("reviewer").get("/api/notifications/").json()
    assert body["count"] == 3
    rows = body["results"]
    # the unread first (newest first), then the read one
    assert [r["id"] for r in rows] == [notes[1].pk, notes[0].pk, notes[2].pk]
    assert [r["unread"] for r in rows] == [True, True, False]
    first = rows[1]
    assert first["body"] == "@reviewer first <b>look</b>"  # JSON: the text as written
    assert first["author"] == "annotator" and first["about"] == "the contract"
    assert first["contract"] == contract.pk and first["project"] == contract.project.slug
    assert rows[2]["read_at"] is not None and first["read_at"] is None
    unread = api("reviewer").get("/api/notifications/?unread=1").json()["results"]
    assert [r["id"] for r in unread] == [notes[1].pk, notes[0].pk]


def test_a_user_marks_their_notification_read(api, notes):
    client = api("reviewer")
    response = client.post(f"/api/notifications/{notes[0].pk}/read/")
    assert response.status_code == 200
    assert response.json()["unread"] is False and response.json()["read_at"]
    notes[0].refresh_from_db()
    assert notes[0].read_at is not None
    again = client.post(f"/api/notifications/{notes[0].pk}/read/")  # idempotent
    assert again.status_code == 200 and again.json()["read_at"] == response.json()["read_at"]
    unread = client.get("/api/notifications/?unread=1").json()["results"]
    assert [r["id"] for r in unread] == [notes[1].pk]


def test_nobody_sees_or_marks_another_users_notification(api, notes, users):
    admins = Notification.objects.get(user=users["admin"])
    for role in ("admin", "annotator", "outsider"):
        listed = {r["id"] for r in api(role).get("/api/notifications/").json()["results"]}
        assert not listed & {n.pk for n in notes}, role
    assert {r["id"] for r in api("admin").get("/api/notifications/").json()["results"]} == {
        admins.pk
    }
    for role in ("admin", "annotator", "outsider"):
        assert api(role).post(f"/api/notifications/{notes[0].pk}/read/").status_code == 404
    assert api("reviewer").post(f"/api/notifications/{admins.pk}/read/").status_code == 404
    notes[0].refresh_from_db()
    admins.refresh_from_db()
    assert notes[0].read_at is None and admins.read_at is None
    assert api(None).get("/api/notifications/").status_code in (401, 403)
    assert api(None).post(f"/api/notifications/{notes[0].pk}/read/").status_code in (401, 403)
    assert api("reviewer").get("/api/notifications/read/").status_code in (404, 405)


def test_a_former_member_neither_lists_nor_marks_that_projects_notifications(api, notes, users):
    from audit.models import Membership

    Membership.objects.filter(user=users["reviewer"]).delete()
    assert api("reviewer").get("/api/notifications/").json()["count"] == 0
    # marking one read would send back the comment's body: a former member reads none
    assert api("reviewer").post(f"/api/notifications/{notes[0].pk}/read/").status_code == 404
    notes[0].refresh_from_db()
    assert notes[0].read_at is None
