"""Blind annotation in the workspace: the annotator's own copy with the outline, the
highlighted artifact and the node panel; htmx answers; blindness kept by the server.
And the curator's side: evidence highlighted in the adjudication table, row labels
before adjudication, the κ note, and a curator who is not asked to annotate."""

from __future__ import annotations

import pytest
from django.urls import reverse

from audit import services
from audit.models import AnnotatorDecision, Node
from audit.templatetags.team_tags import kappa_note

from .team_helpers import decide_all

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name, *args):
    return reverse(f"audit:{name}", args=args)


def test_the_blind_page_is_the_workspace_over_the_annotators_own_copy(client, team):
    contract = team["contract"]
    client.force_login(team["ann1"])
    page = client.get(url("annotate", contract.pk)).content.decode()
    assert 'id="ws-outline"' in page and 'id="ws-text"' in page and 'data-blind="1"' in page
    assert 'class="hl t-' in page  # the evidence is highlighted in the artifact
    assert url("blind_panel", contract.pk, 0).removesuffix("0/") in page  # outline links
    assert "js/workspace.js" in page


def test_a_key_decision_swaps_the_panel_and_opens_the_next_undecided_node(client, team):
    contract = team["contract"]
    first = contract.nodes.get(node_id="handle_refund")
    client.force_login(team["ann1"])
    response = client.post(
        url("decide", contract.pk, first.pk), {"action": "confirm", "advance": "1"}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="ws-detail"' in body and 'data-node="lookup_order"' in body.split("</section>")[0]
    assert 'id="ws-outline" class="outline" hx-target="#ws-detail" hx-swap-oob="true"' in body
    assert f'id="ol-{first.pk}" class="ol-item t-intent s-confirmed' in body
    assert AnnotatorDecision.objects.get(node=first, user=team["ann1"]).action == "confirm"
    assert Node.objects.get(pk=first.pk).review_status == "proposed"  # shared node untouched


def test_without_htmx_a_decision_redirects_back_to_the_node(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    response = client.post(url("decide", contract.pk, node.pk), {"action": "reject"})
    assert response.status_code == 302
    assert response["Location"] == url("annotate", contract.pk) + "?node=verify_owner"


def test_selected_text_becomes_evidence_of_the_copy_and_is_highlighted(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    response = client.post(
        url("decide_evidence", contract.pk, node.pk),
        {"start": 400, "end": 430, "expected_version": 0},  # no decision yet
        **HTMX,
    )
    assert response.status_code == 200
    mine = AnnotatorDecision.objects.get(node=node, user=team["ann1"])
    assert mine.action == "edit" and mine.fields == {"evidence": [[149, 230], [400, 430]]}
    assert 'id="s400" data-s="400" class="hl t-validation s-edited"' in response.content.decode()
    assert f'data-copy-version="{mine.version}"' in response.content.decode()
    client.post(
        url("decide_evidence", contract.pk, node.pk),
        {"start": 400, "end": 430, "remove": "on", "expected_version": mine.version},
        **HTMX,
    )
    mine.refresh_from_db()
    assert mine.action == "confirm" and mine.fields == {}  # back to the proposal


def test_evidence_added_on_a_stale_copy_is_409_and_changes_nothing(client, team):
    """Two tabs on one copy: the second adds evidence on the version it saw, after the
    first changed the copy; it is refused as a stale write of the workspace is."""
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    panel = client.get(url("blind_panel", contract.pk, node.pk), **HTMX).content.decode()
    assert 'data-copy-version="0"' in panel  # what the key sends: no decision yet
    evidence = url("decide_evidence", contract.pk, node.pk)
    first = client.post(evidence, {"start": 400, "end": 430, "expected_version": 0}, **HTMX)
    assert first.status_code == 200  # the first tab
    mine = AnnotatorDecision.objects.get(node=node, user=team["ann1"])
    seen = mine.fields, mine.version
    stale = client.post(evidence, {"start": 500, "end": 520, "expected_version": 0}, **HTMX)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed meanwhile" in page and "not saved" in page
    assert f'data-copy-version="{mine.version}"' in page  # the panel again, current
    mine.refresh_from_db()
    assert (mine.fields, mine.version) == seen
    # on a copy that has a decision too, and for a span taken away
    for body in ({"start": 500, "end": 520}, {"start": 400, "end": 430, "remove": "on"}):
        again = client.post(evidence, body | {"expected_version": mine.version - 1}, **HTMX)
        assert again.status_code == 409, body
    mine.refresh_from_db()
    assert (mine.fields, mine.version) == seen
    # a key press naming no version is not applied with a guessed one
    unversioned = client.post(evidence, {"start": 500, "end": 520}, **HTMX)
    assert unversioned.status_code == 422 and "version" in unversioned.content.decode()
    # the version it saw: applied
    fresh = client.post(
        evidence, {"start": 500, "end": 520, "expected_version": mine.version}, **HTMX
    )
    assert fresh.status_code == 200
    mine.refresh_from_db()
    assert [500, 520] in mine.fields["evidence"] and mine.version == seen[1] + 1


def test_a_stale_decision_through_the_api_is_409(team):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    services.decision_record(node=node, user=team["ann1"], action="confirm")
    api = APIClient()
    token, _ = Token.objects.get_or_create(user=team["ann1"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    decisions = f"/api/contracts/{contract.pk}/decisions/"
    body = {"node": "verify_owner", "action": "reject"}
    assert api.post(decisions, body | {"expected_version": 1}, format="json").status_code < 300
    stale = api.post(decisions, body | {"expected_version": 1}, format="json")
    assert stale.status_code == 409 and "changed meanwhile" in stale.json()["detail"]


def test_an_edit_in_the_panel_keeps_only_what_differs_from_the_proposal(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    form = client.get(url("decide_edit", contract.pk, node.pk), **HTMX).content.decode()
    assert 'data-testid="blind-edit-form"' in form and f'value="{node.label}"' in form
    data = {"type": node.type, "label": "Check the email", "required": "yes", "combine": "all"}
    response = client.post(url("decide_edit", contract.pk, node.pk), data, **HTMX)
    assert response.status_code == 200
    mine = AnnotatorDecision.objects.get(node=node, user=team["ann1"])
    assert mine.fields == {"label": "Check the email"}


def test_the_blind_workspace_never_shows_another_annotators_decisions(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    services.decision_record(
        node=node, user=team["ann1"], action="edit", fields={"label": "SECRET-LABEL-1"}
    )
    client.force_login(team["ann2"])
    pages = [
        client.get(url("annotate", contract.pk) + "?node=verify_owner"),
        client.get(url("blind_panel", contract.pk, node.pk), **HTMX),
        client.get(url("decide_edit", contract.pk, node.pk), **HTMX),
        client.post(url("decide", contract.pk, node.pk), {"action": "confirm"}, **HTMX),
    ]
    for response in pages:
        assert "SECRET-LABEL-1" not in response.content.decode()
    assert client.get(url("adjudicate", contract.pk)).status_code == 403
    assert client.get(url("agreement_report", contract.pk, "json")).status_code == 403
    api = client.get(f"/api/contracts/{contract.pk}/decisions/").json()
    rows = api["results"] if isinstance(api, dict) else api
    assert {r["user"] for r in rows} == {"ann2"}


def test_outsiders_get_404_and_the_annotators_decide_only_their_own_copy(client, users, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(users["outsider"])
    assert client.get(url("blind_panel", contract.pk, node.pk), **HTMX).status_code == 404
    assert (
        client.post(url("decide", contract.pk, node.pk), {"action": "confirm"}).status_code == 404
    )
    assert not AnnotatorDecision.objects.exists()


def test_the_curator_is_not_asked_to_annotate(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["curator"])
    page = client.get(url("annotate", contract.pk)).content.decode()
    assert "You curate this contract" in page and 'data-testid="blind-actions"' not in page
    team_page = client.get(url("team", contract.pk)).content.decode()
    assert "Your blind copy" not in team_page and 'data-testid="blind-tab"' not in team_page
    client.force_login(team["ann1"])
    assert 'data-testid="blind-tab"' in client.get(url("team", contract.pk)).content.decode()
    client.force_login(team["curator"])
    response = client.post(url("decide", contract.pk, node.pk), {"action": "confirm"}, **HTMX)
    assert response.status_code == 422 and "you curate this contract" in response.content.decode()
    assert not AnnotatorDecision.objects.exists()


def _disputed_evidence_row(client, team) -> str:
    """The curator's adjudication row of verify_owner, after ann1 narrowed its evidence
    to [149, 189] and ann2 confirmed it as proposed ([149, 230])."""
    contract = team["contract"]
    decide_all(contract, team["ann1"], {"verify_owner": ("edit", {"evidence": [[149, 189]]})})
    decide_all(contract, team["ann2"])
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    page = client.get(url("adjudicate", contract.pk)).content.decode()
    row = page[page.index('data-node="verify_owner"') :]
    return row[: row.index("</tr>")]


def test_the_adjudication_table_highlights_each_annotators_evidence_in_the_source(client, team):
    contract = team["contract"]
    row = _disputed_evidence_row(client, team)
    text = contract.artifact.text
    assert f'<mark class="ev ev-a0 ev-a1" data-owners="0 1">{text[149:189]}</mark>' in row
    assert f'<mark class="ev ev-a1" data-owners="1">{text[189:230]}</mark>' in row
    assert "[149" not in row and "spans differ" in row


def test_before_adjudication_undecided_nodes_are_not_labelled_agreed(client, team):
    contract = team["contract"]
    first = contract.nodes.get(node_id="handle_refund")
    for who in ("ann1", "ann2"):
        services.decision_record(node=first, user=team[who], action="confirm")
    client.force_login(team["curator"])
    page = client.get(url("adjudicate", contract.pk)).content.decode()
    states = page.count('data-state="undecided"'), page.count('data-state="agreed"')
    assert states == (contract.nodes.count() - 1, 1)


def test_a_low_kappa_beside_high_raw_agreement_is_explained_in_one_line():
    paradox = {"nodes": 11, "disagreements": 2, "kappa": -0.048}
    assert "agree on 9 of 11 nodes, yet κ is -0.05" in kappa_note(paradox)
    assert kappa_note({"nodes": 11, "disagreements": 2, "kappa": 0.7}) == ""
    assert kappa_note({"nodes": 11, "disagreements": 6, "kappa": 0.1}) == ""
    assert kappa_note(None) == ""


def test_the_workspace_sends_an_annotator_of_a_blind_contract_to_their_copy(client, team):
    contract = team["contract"]
    client.force_login(team["ann1"])
    page = client.get(url("workspace", contract.pk)).content.decode()
    assert 'data-testid="blind-banner"' in page and url("annotate", contract.pk) in page
    client.force_login(team["curator"])
    assert (
        'data-testid="blind-banner"'
        not in client.get(url("workspace", contract.pk)).content.decode()
    )


def test_the_curator_edits_evidence_by_ticking_the_versions_spans_not_offsets(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    row = _disputed_evidence_row(client, team)
    assert 'name="spans" value="149-189"' in row and 'name="spans" value="149-230"' in row
    assert 'name="evidence_start"' not in row
    client.post(url("curate", contract.pk, node.pk), {"action": "edit", "spans": ["149-189"]})
    assert [(s.start, s.end) for s in node.spans.all()] == [(149, 189)]
    bad = client.post(url("curate", contract.pk, node.pk), {"action": "edit", "spans": ["x"]})
    assert bad.status_code == 302 and [(s.start, s.end) for s in node.spans.all()] == [(149, 189)]


def test_a_pick_answers_with_the_nodes_row_in_place(client, team):
    contract = team["contract"]
    node = contract.nodes.get(node_id="approve_refund")
    decide_all(contract, team["ann1"])
    decide_all(contract, team["ann2"], {"approve_refund": ("reject", None)})
    client.force_login(team["curator"])
    client.post(url("adjudication_start", contract.pk))
    response = client.post(url("curate", contract.pk, node.pk), {"pick": "ann2"}, **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith(f'<tr id="n-{node.pk}"') and body.count("<tr") == 1
    assert '<span data-testid="curated">pick (ann2): reject</span>' in body
    refused = client.post(url("curate", contract.pk, node.pk), {"pick": "nobody"}, **HTMX)
    assert refused.status_code == 422 and 'data-testid="row-error"' in refused.content.decode()


def test_an_edit_of_a_copy_changed_meanwhile_is_409_and_keeps_the_typed_text(client, team):
    """Two tabs on one copy: the second saves an edit on the version it saw, after the
    first saved again; it is refused with the panel's form still holding its text."""
    contract = team["contract"]
    node = contract.nodes.get(node_id="verify_owner")
    client.force_login(team["ann1"])
    edit = url("decide_edit", contract.pk, node.pk)
    body = {"type": node.type, "required": "yes", "combine": node.combine}
    assert client.post(edit, body | {"label": "Check the owner"}, **HTMX).status_code == 200
    seen_by_both = AnnotatorDecision.objects.get(node=node, user=team["ann1"]).version
    again = body | {"label": "Check the owner first", "expected_version": seen_by_both}
    assert client.post(edit, again, **HTMX).status_code == 200  # the first tab
    mine = AnnotatorDecision.objects.get(node=node, user=team["ann1"])
    saved = mine.fields, mine.version
    other = body | {"label": "Typed in the other tab", "expected_version": seen_by_both}
    stale = client.post(edit, other, **HTMX)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed meanwhile" in page and "Typed in the other tab" in page
    mine.refresh_from_db()
    assert (mine.fields, mine.version) == saved
