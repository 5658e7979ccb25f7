"""The members page (add, change a role, remove; admins only; a project keeps an admin)
and the notifications a mention leaves on the mentioned member's home page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from audit import services
from audit.models import Assignment, Membership, Notification

pytestmark = pytest.mark.django_db


def url(name, *args):
    return reverse(f"audit:{name}", args=args)


def test_an_admin_adds_a_member_changes_the_role_and_removes_them(client, users, project):
    client.force_login(users["admin"])
    client.post(url("member_add", project.slug), {"username": "outsider", "role": "annotator"})
    member = Membership.objects.get(project=project, user=users["outsider"])
    assert member.role == "annotator"
    client.post(url("member_role", project.slug, member.pk), {"role": "reviewer"})
    member.refresh_from_db()
    assert member.role == "reviewer"
    page = client.get(url("members", project.slug)).content.decode()
    assert 'data-user="outsider"' in page and 'class="stack" data-testid="member-add"' in page
    client.post(url("member_remove", project.slug, member.pk))
    assert not Membership.objects.filter(pk=member.pk).exists()


def test_removing_a_member_drops_their_assignments_in_the_project(client, users, contract):
    services.assignment_create(
        project=contract.project, user=users["annotator"], by=users["admin"], role="annotator"
    )
    member = Membership.objects.get(project=contract.project, user=users["annotator"])
    client.force_login(users["admin"])
    client.post(url("member_remove", contract.project.slug, member.pk))
    assert not Assignment.objects.filter(user=users["annotator"]).exists()


def test_the_last_admin_can_be_neither_demoted_nor_removed(client, users, project):
    admin = Membership.objects.get(project=project, user=users["admin"])
    client.force_login(users["admin"])
    response = client.post(
        url("member_role", project.slug, admin.pk), {"role": "annotator"}, follow=True
    )
    assert "a project keeps at least one admin" in response.content.decode()
    client.post(url("member_remove", project.slug, admin.pk))
    admin.refresh_from_db()
    assert admin.role == "admin"


def test_only_admins_manage_members_and_outsiders_get_404(client, users, project):
    reviewer = Membership.objects.get(project=project, user=users["reviewer"])
    client.force_login(users["reviewer"])
    page = client.get(url("members", project.slug)).content.decode()
    assert 'data-user="admin"' in page and "member-add" not in page
    add = client.post(url("member_add", project.slug), {"username": "outsider", "role": "admin"})
    role = client.post(url("member_role", project.slug, reviewer.pk), {"role": "admin"})
    assert add.status_code == role.status_code == 403
    client.force_login(users["outsider"])
    assert client.get(url("members", project.slug)).status_code == 404
    other = Membership.objects.get(user=users["outsider"])
    client.force_login(users["admin"])  # a member of another project is not one of this
    assert client.post(url("member_remove", project.slug, other.pk)).status_code == 404


def test_a_bad_new_member_is_refused_with_a_message(client, users, project):
    client.force_login(users["admin"])
    for data, message in (
        ({"username": "nobody", "role": "annotator"}, "no user named"),
        ({"username": "reviewer", "role": "annotator"}, "already a member"),
        ({"username": "outsider", "role": "boss"}, "Role"),
    ):
        body = client.post(url("member_add", project.slug), data, follow=True).content.decode()
        assert message in body, data
    assert not Membership.objects.filter(project=project, user=users["outsider"]).exists()


def test_a_mention_notifies_the_member_on_their_home_page_until_read(client, users, contract):
    client.force_login(users["annotator"])
    client.post(
        url("comment_new", contract.pk),
        {"about": "contract", "body": "@reviewer <b>look</b> @annotator @outsider"},
    )
    [note] = Notification.objects.all()  # not the author, not a non-member
    assert note.user == users["reviewer"]
    client.force_login(users["reviewer"])
    home = client.get(url("project_detail", contract.project.slug)).content.decode()
    assert 'data-testid="notification"' in home and "&lt;b&gt;look&lt;/b&gt;" in home
    client.force_login(users["annotator"])  # someone else's notification is a 404
    assert client.post(url("notification_read", note.pk)).status_code == 404
    client.force_login(users["reviewer"])
    back = client.post(url("notification_read", note.pk), {"next": "https://evil.example/"})
    assert back["Location"] == url("project_list")  # never off the site
    note.refresh_from_db()
    assert note.read_at is not None
    home = client.get(url("project_list"), follow=True).content.decode()
    assert 'data-testid="notification"' not in home
