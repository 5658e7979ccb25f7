"""The LLM proposer in the web app, against a real local OpenAI-compatible server.

The server (``tests/llm/fake_openai.py``) answers ``/v1/chat/completions`` from a
script on 127.0.0.1; the app finds it through the environment, as a deployment would.
Celery runs eagerly here, so its retries run too (without the backoff waits).
"""

from __future__ import annotations

from typing import Any

import pytest
from llm.fake_openai import TEST_KEY as KEY
from llm.fake_openai import completion, error

from audit import services
from audit.context_processors import NOT_CONFIGURED, llm_status_from_env
from audit.models import ProposalRun
from audit.tasks import run_proposals

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
HALLUCINATED = "Always refund the full amount without asking any questions."


@pytest.fixture
def draft(project, users, refund_doc):
    """The example artifact with no nodes yet."""
    return services.contract_create(
        project=project, user=users["admin"], key="draft", text=refund_doc["artifact"]["text"]
    )


@pytest.fixture
def propose(django_capture_on_commit_callbacks):
    """Press one of the "Propose obligations" buttons; the task runs on commit."""

    def run(client, contract, proposer: str):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/c/{contract.pk}/propose/", {"proposer": proposer}, **HTMX)

    return run


def answer(doc: dict[str, Any]) -> dict[str, Any]:
    """The audited refund-mini graph as a model's answer, plus one invented quote."""
    text = doc["artifact"]["text"]
    nodes = [
        {
            "key": n["id"],
            "type": n["type"],
            "label": n["label"],
            "description": n["description"],
            "quote": text[n["evidence"][0]["start"] : n["evidence"][0]["end"]],
            "parent": n["parent"],
            "required": n["required"],
            "score": 0.8,
            "justification": f"the artifact states: {n['label'].lower()}",
        }
        for n in doc["nodes"]
    ]
    nodes.append(
        {
            "key": "invented",
            "type": "action",
            "label": "Refund without questions",
            "description": "",
            "quote": HALLUCINATED,
            "parent": None,
            "required": True,
            "score": 0.7,
            "justification": "made up",
        }
    )
    return {"nodes": nodes, "edges": doc["edges"], "invariants": []}


def test_an_annotator_gets_llm_proposals_with_the_model_as_provenance(
    llm_env, login, draft, propose, refund_doc
):
    llm_env.push(completion(answer(refund_doc), prompt_tokens=120, completion_tokens=80))
    response = propose(login("annotator"), draft, "llm")
    assert response.status_code == 200

    run = ProposalRun.objects.get(contract=draft)
    assert (run.status, run.proposer, run.used_proposer) == ("done", "llm", "llm:fake-model")
    assert run.model_name == "fake-model" and run.attempts == 1 and run.error == ""
    assert run.usage["calls"] == 1 and run.usage["failed_calls"] == 0
    assert (run.usage["prompt_tokens"], run.usage["completion_tokens"]) == (120, 80)
    assert run.usage["seconds"] >= 0 and run.llm_calls[0]["purpose"] == "propose"
    # Every kept node is *proposed*, provenance = the model, with score and justification.
    nodes = list(draft.nodes.all())
    assert len(nodes) == run.created_nodes == len(refund_doc["nodes"])
    assert {n.review_status for n in nodes} == {"proposed"}
    assert {n.proposer for n in nodes} == {"llm:fake-model"}
    assert all(n.score == 0.8 and n.justification.startswith("the artifact") for n in nodes)
    assert draft.edges.count() == len(refund_doc["edges"])
    # The invented quote is dropped, and the reason is stored and shown.
    assert not draft.nodes.filter(label="Refund without questions").exists()
    assert run.discarded == [
        {
            "what": "node",
            "label": "Refund without questions",
            "reason": f"quote not found in the artifact: {HALLUCINATED!r}",
        }
    ]
    # The model saw the artifact as data, and the key went only to the server.
    assert llm_env.requests[0]["model"] == "fake-model"
    assert refund_doc["artifact"]["text"] in llm_env.user_messages(0)[0]
    page = login("annotator").get(f"/c/{draft.pk}/").content.decode()
    assert 'data-testid="proposal-run"' in page and "quote not found in the artifact" in page
    assert "Refund without questions" in page
    assert "fake-model: 11 new, 1 discarded · 200 tokens" in page
    assert "LLM: fake-model @ 127.0.0.1:" in page and KEY not in page


def test_without_a_key_the_heuristic_runs_and_says_so(login, draft, propose):
    response = propose(login("annotator"), draft, "llm")
    assert response.status_code == 200
    run = ProposalRun.objects.get(contract=draft)
    assert (run.status, run.proposer, run.used_proposer) == ("done", "llm", "heuristic")
    assert run.fell_back and "no LLM endpoint configured" in run.notice
    assert run.model_name == "" and run.usage == {} and run.llm_calls == []
    assert run.created_nodes > 5
    assert set(draft.nodes.values_list("proposer", flat=True)) == {"heuristic"}
    page = login("annotator").get(f"/c/{draft.pk}/").content.decode()
    assert NOT_CONFIGURED in page
    assert "Heuristic ran: no LLM configured" in page
    assert "using the offline heuristic proposer instead" in page  # the notice, in History
    # The LLM button is there but disabled, with the reason as its tooltip.
    assert f'<span class="disabled-wrap" title="{NOT_CONFIGURED}">' in page
    assert 'value="llm" disabled data-testid="propose-llm"' in page


def test_the_banner_is_on_every_page(login, project, llm_env, monkeypatch):
    client = login("annotator")
    page = client.get("/", follow=True).content.decode()
    port = llm_env.base_url.split(":")[2].split("/")[0]
    assert f"LLM: fake-model @ 127.0.0.1:{port}" in page and KEY not in page
    monkeypatch.delenv("CONTRACTEVAL_LLM_API_KEY")
    assert NOT_CONFIGURED in client.get("/", follow=True).content.decode()
    client.logout()
    assert NOT_CONFIGURED in client.get("/login/").content.decode()


def test_the_banner_never_shows_credentials_and_names_a_bad_setting(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert llm_status_from_env().text == "LLM: gpt-4o-mini @ api.openai.com"
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:secret@llm.example.org:8443/v1")
    assert llm_status_from_env().text == "LLM: gpt-4o-mini @ llm.example.org:8443"
    monkeypatch.setenv("CONTRACTEVAL_LLM_TIMEOUT", "soon")
    status = llm_status_from_env()
    assert not status.configured and "CONTRACTEVAL_LLM_TIMEOUT='soon'" in status.text


def test_a_transient_failure_retries_the_task_then_succeeds(llm_env, login, draft, propose):
    # Two 500s spend the client's own retries (one retry); the Celery retry succeeds.
    llm_env.push(error(500), error(503), completion(answer_min(draft)))
    propose(login("annotator"), draft, "llm")
    run = ProposalRun.objects.get(contract=draft)
    assert (run.status, run.attempts, run.error, run.notice) == ("done", 2, "", "")
    assert run.usage["calls"] == 3 and run.usage["failed_calls"] == 2
    assert run.created_nodes == 1


def test_a_failing_endpoint_marks_the_run_failed_with_the_reason(llm_env, login, draft, propose):
    # No scripted reply: the server answers 500 to everything.
    response = propose(login("annotator"), draft, "llm")
    assert response.status_code == 200
    run = ProposalRun.objects.get(contract=draft)
    tries = run_proposals.max_retries + 1
    assert (run.status, run.attempts) == ("failed", tries)
    assert "gave up after 2 tries; last HTTP 500" in run.error
    assert run.error.startswith(f"model fake-model at {llm_env.base_url}")
    assert run.usage["calls"] == run.usage["failed_calls"] == 2 * tries == len(llm_env.requests)
    assert draft.nodes.count() == 0 and run.finished_at is not None
    page = login("annotator").get(f"/c/{draft.pk}/").content.decode()
    assert "Proposer failed" in page and "last HTTP 500" in page


def test_a_permanent_error_fails_at_once(llm_env, login, draft, propose):
    llm_env.push(error(401, "bad key"))
    propose(login("annotator"), draft, "llm")
    run = ProposalRun.objects.get(contract=draft)
    assert (run.status, run.attempts) == ("failed", 1)
    assert "HTTP 401: bad key" in run.error and len(llm_env.requests) == 1


def test_an_unknown_proposer_is_refused(login, draft, propose):
    response = propose(login("annotator"), draft, "oracle")
    assert response.status_code == 422 and "unknown proposer" in response.content.decode()
    assert not ProposalRun.objects.filter(contract=draft).exists()


def answer_min(contract) -> dict[str, Any]:
    """One node quoting the artifact's first sentence."""
    text = contract.artifact.text
    quote = "When a customer asks for a refund, follow this procedure."
    assert quote in text
    return {
        "nodes": [
            {
                "key": "n1",
                "type": "intent",
                "label": "Handle a refund request",
                "description": "",
                "quote": quote,
                "parent": None,
                "required": True,
                "score": 0.9,
                "justification": "the opening sentence",
            }
        ],
        "edges": [],
        "invariants": [],
    }
