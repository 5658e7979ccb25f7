"""Starting a contract from a new instruction artifact, and editing its details."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit import services
from audit.forms import NewContractForm
from audit.models import Artifact, AuditRecord, Contract, ProposalRun
from matching.input_limits import Limits

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
SOP = (
    "# Refund requests\n\n"
    "1. Verify the order belongs to the customer.\n"
    "2. If the item arrived damaged, refund in full.\n"
    "3. Never share another customer's data.\n\n"
    'Finish with a JSON object with the keys "order_id" and "resolution".\n'
)


def form_data(**overrides):
    data = {
        "title": "Refund requests",
        "key": "refunds",
        "domain": "customer support",
        "media_type": "text/markdown",
        "text": SOP,
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


@pytest.fixture
def post_new(django_capture_on_commit_callbacks):
    """POST the new-contract form; a proposal task runs when the transaction commits."""

    def post(client, slug="tests", **overrides):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/p/{slug}/new/", form_data(**overrides))

    return post


def nothing_stored():
    return (
        not Contract.objects.exclude(key="refund-mini").exists()
        and not Artifact.objects.filter(content_hash=Artifact.hash_text(SOP)).exists()
        and not AuditRecord.objects.filter(action="create", object_type="contract").exists()
    )


# ---------------------------------------------------------------------------- create


def test_the_project_page_offers_new_contract_to_annotators(login, project):
    page = login("annotator").get("/p/tests/").content.decode()
    assert 'href="/p/tests/new/"' in page
    form = login("annotator").get("/p/tests/new/")
    assert form.status_code == 200
    html = form.content.decode()
    assert 'name="csrfmiddlewaretoken"' in html and 'enctype="multipart/form-data"' in html
    assert 'name="propose"' in html and 'name="text"' in html and 'name="file"' in html


def test_an_annotator_creates_a_draft_with_the_exact_text_and_its_hash(
    login, project, users, post_new
):
    response = post_new(login("annotator"))
    contract = Contract.objects.get(project=project, key="refunds")
    assert response.status_code == 302 and response["Location"] == f"/c/{contract.pk}/"
    assert contract.status == "draft" and contract.version == 1
    assert contract.title == "Refund requests" and contract.domain == "customer support"
    assert contract.artifact.text == SOP
    assert contract.artifact.media_type == "text/markdown"
    assert contract.artifact.content_hash == Artifact.hash_text(SOP)
    assert contract.nodes.count() == 0
    assert not ProposalRun.objects.filter(contract=contract).exists()
    record = AuditRecord.objects.get(contract=contract, action="create", object_type="contract")
    assert record.user == users["annotator"]
    assert record.after["artifact"] == Artifact.hash_text(SOP)
    assert record.after["media_type"] == "text/markdown"
    # the workspace opens on it
    page = login("annotator").get(response["Location"]).content.decode()
    assert "Refund requests" in page and "Verify the order belongs to the customer." in page


def test_pasted_crlf_line_breaks_are_stored_as_the_user_sees_them(login, project, post_new):
    post_new(login("annotator"), text=SOP.replace("\n", "\r\n"))
    assert Contract.objects.get(key="refunds").artifact.text == SOP


def test_an_admin_may_create_and_the_id_is_suggested_from_the_title(login, project, post_new):
    response = post_new(login("admin"), key="", title="Refunds & Returns: EU (v2)")
    assert response.status_code == 302
    assert Contract.objects.filter(key="refunds-returns-eu-v2").exists()
    assert NewContractForm.suggest_key("  Über-Politik!  ") == "uber-politik"


def test_proposals_are_requested_when_asked(login, project, post_new):
    client = login("annotator")
    response = post_new(client, propose="on", proposer="heuristic")
    assert response.status_code == 302
    contract = Contract.objects.get(key="refunds")
    run = ProposalRun.objects.get(contract=contract)
    assert run.status == "done" and run.proposer == "heuristic" and run.created_nodes > 3
    assert set(contract.nodes.values_list("review_status", flat=True)) == {"proposed"}
    assert contract.records.filter(action="request_proposals").exists()
    # the task ran only after the view answered (on commit): the banner says it is pending
    assert "Proposing obligations…" in client.get(response["Location"]).content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_banner_reports_proposals_that_finished_in_process(login, project):
    # real commits: the in-process task has run before the view writes the banner
    client = login("annotator")
    response = client.post("/p/tests/new/", form_data(propose="on", proposer="heuristic"))
    run = ProposalRun.objects.get(contract__key="refunds")
    assert run.status == "done"
    page = client.get(response["Location"]).content.decode()
    assert f"{run.created_nodes} obligation(s) proposed: confirm or reject them." in page
    assert "Proposing obligations…" not in page


def test_asking_for_the_llm_without_one_configured_runs_the_heuristic(
    login, project, post_new, monkeypatch
):
    for name in ("CONTRACTEVAL_LLM_API_KEY", "CONTRACTEVAL_LLM_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    post_new(login("annotator"), propose="on", proposer="llm")
    run = ProposalRun.objects.get(contract__key="refunds")
    assert run.proposer == "llm" and run.used_proposer == "heuristic" and run.status == "done"


def test_an_uploaded_utf8_file_becomes_the_artifact(login, project, post_new):
    text = "# Política\n\n1. Verifique el pedido — siempre.\n"
    upload = SimpleUploadedFile("sop.md", text.encode("utf-8"), content_type="text/markdown")
    response = post_new(login("annotator"), text="", file=upload)
    assert response.status_code == 302
    assert Contract.objects.get(key="refunds").artifact.text == text


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"key": "-bad id"}, "Contract id", "letters, digits"),
        ({"key": "x" * 129}, "Contract id", "at most 128"),
        ({"text": ""}, "Artifact text", "paste the artifact text"),
        ({"text": "  \n\t\n"}, "Artifact text", "paste the artifact text"),
        ({"title": ""}, "Title", "required"),
        ({"media_type": "application/pdf"}, "Media type", "valid choice"),
    ],
)
def test_bad_input_re_renders_the_form_naming_the_field_and_stores_nothing(
    login, project, post_new, overrides, field, message
):
    response = post_new(login("annotator"), **overrides)
    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-testid="form-errors"' in page
    assert f"{field}</a>: " in page and message in page
    assert nothing_stored()


def test_a_duplicate_id_is_refused(login, project, contract, post_new):
    response = post_new(login("annotator"), key="refund-mini")
    assert response.status_code == 400
    assert "a contract &#x27;refund-mini&#x27; exists already" in response.content.decode()
    assert Contract.objects.filter(key="refund-mini").count() == 1
    assert nothing_stored()
    # the entered text is kept for another try
    assert "Verify the order belongs to the customer." in response.content.decode()


def test_the_service_refuses_a_duplicate_and_a_bad_id_too(project, users):
    services.contract_start(project=project, user=users["annotator"], key="a", text="x")
    with pytest.raises(services.ServiceError, match="exists already"):
        services.contract_start(project=project, user=users["annotator"], key="a", text="y")
    with pytest.raises(services.ServiceError, match="not valid"):
        services.contract_start(project=project, user=users["annotator"], key="a b", text="y")
    assert Contract.objects.filter(project=project).count() == 1


def test_a_non_utf8_upload_is_refused(login, project, post_new):
    upload = SimpleUploadedFile("sop.txt", "Política: refunds".encode("latin-1"))
    response = post_new(login("annotator"), text="", file=upload)
    assert response.status_code == 400
    assert "not UTF-8" in response.content.decode()
    assert nothing_stored()


def test_an_oversize_upload_or_text_is_413_naming_the_limit(login, project, post_new):
    limit = Limits().artifact_bytes
    big = b"a" * (limit + 1)
    response = post_new(login("annotator"), text="", file=SimpleUploadedFile("sop.md", big))
    named = f"is {limit + 1:,} bytes; the limit is {limit:,} (INPUT_LIMITS artifact_bytes)"
    assert response.status_code == 413 and named in response.content.decode()
    response = post_new(login("annotator"), text="b" * (limit + 1))
    assert response.status_code == 413 and named in response.content.decode()
    assert nothing_stored()


def test_other_file_types_and_text_plus_file_are_refused(login, project, post_new):
    pdf = SimpleUploadedFile("sop.pdf", b"%PDF-1.4")
    response = post_new(login("annotator"), text="", file=pdf)
    assert response.status_code == 400 and "upload a .md or .txt file" in response.content.decode()
    both = SimpleUploadedFile("sop.md", b"# hi\n")
    response = post_new(login("annotator"), file=both)
    assert response.status_code == 400 and "not both" in response.content.decode()
    assert nothing_stored()


# ---------------------------------------------------------------------------- who may


def test_a_reviewer_only_member_cannot_start_a_contract(login, project, post_new):
    client = login("reviewer")
    assert 'href="/p/tests/new/"' not in client.get("/p/tests/").content.decode()
    assert client.get("/p/tests/new/").status_code == 403
    assert post_new(client).status_code == 403
    assert nothing_stored()


def test_a_member_of_another_project_gets_404(login, project, post_new):
    client = login("outsider")
    assert client.get("/p/tests/new/").status_code == 404
    assert post_new(client).status_code == 404
    assert nothing_stored()


def test_anonymous_users_are_sent_to_log_in_and_get_is_the_only_other_method(
    client, login, project
):
    response = client.post("/p/tests/new/", form_data())
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert login("annotator").put("/p/tests/new/").status_code == 405
    assert nothing_stored()


def test_the_form_needs_a_csrf_token(login, project, users):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(users["annotator"])
    assert client.post("/p/tests/new/", form_data()).status_code == 403
    assert nothing_stored()


def test_title_and_text_are_escaped(login, project, post_new):
    xss = "<script>alert('x')</script>"
    post_new(login("annotator"), title=f"Refunds {xss}", text=f"{SOP}\n{xss}\n")
    contract = Contract.objects.get(key="refunds")
    assert contract.title == f"Refunds {xss}" and xss in contract.artifact.text
    for url in (f"/c/{contract.pk}/", "/p/tests/"):
        page = login("annotator").get(url).content.decode()
        assert xss not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    # and on a re-rendered form
    response = post_new(login("annotator"), key="bad key", title=xss, text=xss)
    page = response.content.decode()
    assert response.status_code == 400 and xss not in page and "&lt;script&gt;" in page


# ---------------------------------------------------------------------------- details


@pytest.fixture
def started(project, users):
    return services.contract_start(
        project=project,
        user=users["annotator"],
        key="refunds",
        title="Refunds",
        domain="support",
        media_type="text/markdown",
        text=SOP,
    )


def test_editing_the_details_is_recorded_in_history(login, started, users):
    client = login("annotator")
    assert 'data-testid="details-form"' in client.get(f"/c/{started.pk}/").content.decode()
    response = client.post(
        f"/c/{started.pk}/details/",
        {
            "title": "Refunds & returns",
            "domain": "retail",
            "media_type": "text/plain",
            "version": 1,
        },
        **HTMX,
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="ws-header"' in page and "Refunds &amp; returns" in page
    started.refresh_from_db()
    assert (started.title, started.domain) == ("Refunds & returns", "retail")
    assert started.artifact.media_type == "text/plain" and started.artifact.text == SOP
    record = started.records.get(action="edit", object_type="contract")
    assert record.user == users["annotator"]
    assert record.before == {"title": "Refunds", "domain": "support", "media_type": "text/markdown"}
    assert record.after == {
        "title": "Refunds & returns",
        "domain": "retail",
        "media_type": "text/plain",
    }
    history = client.get(f"/c/{started.pk}/").content.decode()
    assert "edited" in history and "Refunds &amp; returns" in history


def test_a_media_type_change_does_not_touch_an_artifact_other_versions_share(
    login, contract, users
):
    services.contract_mark_audited(contract=contract, user=users["reviewer"])
    draft = services.contract_new_version(contract=contract, user=users["annotator"])
    assert draft.artifact_id == contract.artifact_id
    shared = contract.artifact.media_type
    login("annotator").post(
        f"/c/{draft.pk}/details/",
        {"title": "v2", "domain": "", "media_type": "text/plain", "version": 1},
    )
    draft.refresh_from_db()
    contract.artifact.refresh_from_db()
    assert (
        draft.artifact.media_type == "text/plain" and draft.artifact.text == contract.artifact.text
    )
    assert contract.artifact.media_type == shared


def test_bad_details_name_the_field_and_change_nothing(login, started):
    response = login("annotator").post(
        f"/c/{started.pk}/details/",
        {"title": "", "domain": "", "media_type": "x/y", "version": 1},
        **HTMX,
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "Title: This field is required." in page and "Media type:" in page
    started.refresh_from_db()
    assert started.title == "Refunds" and not started.records.filter(action="edit").exists()


def test_an_audited_contract_refuses_details_edits(login, contract, users):
    audited = services.contract_mark_audited(contract=contract, user=users["reviewer"])
    client = login("admin")
    assert 'data-testid="details-form"' not in client.get(f"/c/{audited.pk}/").content.decode()
    response = client.post(
        f"/c/{audited.pk}/details/",
        {"title": "Changed", "domain": "", "media_type": "text/plain", "version": 1},
        **HTMX,
    )
    assert response.status_code == 422 and "read-only" in response.content.decode()
    audited.refresh_from_db()
    assert audited.title != "Changed"
    assert not audited.records.filter(action="edit", object_type="contract").exists()


def test_details_edits_need_membership(login, started):
    data = {"title": "Changed", "domain": "", "media_type": "text/plain"}
    assert login("outsider").post(f"/c/{started.pk}/details/", data).status_code == 404
    started.refresh_from_db()
    assert started.title == "Refunds"
