"""Suite batches: the fixture suite, uploaded zips (validated, zip-slip safe), progress,
the per-family table and its bars."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from audit.models import Batch
from audit.services import batches
from matching.suite import load_suite, perturb_suite, write_suite

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory, fixture_suite) -> Path:
    """Two contracts of the fixture suite, their first clean cases, every family."""
    suite = load_suite(fixture_suite)
    keep = sorted(suite.contracts)[:2]
    suite.cases = [c for c in suite.cases if c.contract in keep and c.clean][:8]
    suite.contracts = {k: v for k, v in suite.contracts.items() if k in keep}
    cases, _ = perturb_suite(suite, seed=0)
    out = tmp_path_factory.mktemp("suite") / "small"
    write_suite(out, suite.contracts.values(), cases)
    return out


def _zip(folder: Path | None, extra: dict[str, bytes] | None = None, prefix: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if folder is not None:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zf.write(path, prefix + path.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def upload(project, login, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    def post(data: bytes, role: str = "reviewer", **fields):
        body = {"mode": "oracle", "extractor": "none", **fields}
        if data is not None:
            body["suite"] = SimpleUploadedFile("suite.zip", data, "application/zip")
        with django_capture_on_commit_callbacks(execute=True):
            return login(role).post("/p/tests/batches/new/", body)

    return post


def test_an_uploaded_suite_runs_to_the_family_table(upload, small_suite, login):
    r = upload(_zip(small_suite, prefix="small/"))
    batch = Batch.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/b/{batch.pk}/"
    assert batch.status == "done", batch.error
    n = sum(1 for line in (small_suite / "cases.jsonl").open() if line.strip())
    assert batch.done == batch.total == n == batch.scores["cases"]
    assert batch.source == "upload" and batch.name == "suite.zip" and batch.seconds is not None
    assert batch.scores["detection_accuracy"] == 1.0  # oracle mode on generated perturbations
    html = login("annotator").get(r["Location"]).content.decode()
    assert 'data-testid="family-table"' in html
    for family in batch.scores["per_family"]:
        assert f"<td>{family}</td>" in html
    assert 'class="hbar b-det"' in html and 'class="pct-100"' in html
    scores = login("annotator").get(f"/b/{batch.pk}/scores.json")
    assert json.loads(scores.content)["per_family"] == batch.scores["per_family"]


def test_the_fixture_suite_runs_when_nothing_is_uploaded(upload, login, fixture_suite):
    r = upload(None)
    batch = Batch.objects.get()
    assert r.status_code == 302 and batch.status == "done" and batch.source == "fixtures"
    assert batch.name == f"fixtures/{batches.fixture_suite_dir().name}" and batch.archive is None
    assert batch.total == batch.scores["cases"] > 100
    assert "fixtures/" in login("annotator").get("/p/tests/batches/").content.decode()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda s: b"not a zip at all", "not a zip archive"),
        (lambda s: _zip(s, {"../evil.txt": b"x"}), "unsafe path"),
        (lambda s: _zip(s, {"/etc/evil.json": b"x"}), "unsafe path"),
        (lambda s: _zip(s, {"a\\..\\b.json": b"x"}), "unsafe path"),
        (lambda s: _zip(None, {"contracts/x.json": b"{}"}), "must hold one suite"),
        (lambda s: _zip(None, {"cases.jsonl": b""}), "no contracts"),
    ],
)
def test_a_bad_archive_is_refused_and_nothing_is_stored(upload, small_suite, make, message):
    r = upload(make(small_suite))
    assert r.status_code == 400 and Batch.objects.count() == 0
    assert message in r.content.decode()


def test_a_contract_that_fails_its_audit_fails_the_batch_with_the_reason_on_its_page(
    upload, small_suite, login
):
    # the contracts are audited by the worker (the request only checks the zip's shape)
    bad = {"contracts/zz-bad.json": b'{"format": "contracteval.contract/v1"}'}
    r = upload(_zip(small_suite, bad))
    batch = Batch.objects.get()
    assert r.status_code == 302 and batch.status == "failed"
    assert "zz-bad.json" in batch.error and not batch.chunks.exists() and batch.total == 0
    html = login("annotator").get(f"/b/{batch.pk}/").content.decode()
    assert "The batch failed." in html and "zz-bad.json" in html
    assert 'data-testid="batch-preparing"' not in html


def test_a_symbolic_link_is_refused(upload, small_suite):
    buf = io.BytesIO(_zip(small_suite))
    with zipfile.ZipFile(buf, "a") as zf:
        info = zipfile.ZipInfo("contracts/link.json")
        info.external_attr = (0o120777 << 16) | 0
        zf.writestr(info, "/etc/passwd")
    r = upload(buf.getvalue())
    assert r.status_code == 400 and "symbolic link" in r.content.decode()
    assert Batch.objects.count() == 0


def test_archives_past_a_size_limit_are_413_naming_the_limit(upload, small_suite, settings):
    archive = _zip(small_suite)
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, suite_unpacked_bytes=1000)
    r = upload(archive)
    assert r.status_code == 413 and "(INPUT_LIMITS suite_unpacked_bytes)" in r.content.decode()
    settings.INPUT_LIMITS = replace(settings.INPUT_LIMITS, suite_archive_bytes=100)
    r = upload(archive)
    text = r.content.decode()
    assert r.status_code == 413 and "the limit is 100 (INPUT_LIMITS suite_archive_bytes)" in text
    assert f"is {len(archive):,} bytes" in text
    assert Batch.objects.count() == 0


def test_roles_and_options(upload, login, fixture_suite):
    assert upload(None, role="annotator").status_code == 403
    assert upload(None, role="outsider").status_code == 404
    r = upload(None, mode="oracle", extractor="heuristic")
    assert r.status_code == 400 and "choose the extractor" in r.content.decode()
    assert Batch.objects.count() == 0
    assert "Run a suite" not in login("annotator").get("/p/tests/batches/").content.decode()


def test_progress_is_stored_throttled_and_polled(project, users, login, monkeypatch, fixture_suite):
    batch = batches.batch_create(project=project, user=users["reviewer"])  # queued, not run
    client = login("annotator")
    html = client.get(f"/b/{batch.pk}/").content.decode()
    assert f'hx-get="/b/{batch.pk}/status/"' in html and f'href="/b/{batch.pk}/"' in html
    poll = client.get(f"/b/{batch.pk}/status/", **HTMX)
    assert poll.status_code == 200 and 'data-testid="batch-preparing"' in poll.content.decode()
    batch = batches.batch_prepare(batch_id=batch.pk)  # what the worker does first
    assert batch.total > 100 and batch.chunks.count() >= 1
    poll = client.get(f"/b/{batch.pk}/status/", **HTMX)
    assert poll.status_code == 200 and f"0</span> / {batch.total}" in poll.content.decode()
    assert 'data-testid="batch-preparing"' not in poll.content.decode()
    seen: list[int] = []
    real_update = batches.Batch.objects.filter

    def spy(*args, **kwargs):
        qs = real_update(*args, **kwargs)
        original = qs.update

        def update(**values):
            if "done" in values:
                seen.append(values["done"])
            return original(**values)

        qs.update = update
        return qs

    monkeypatch.setattr(batches.Batch.objects, "filter", spy)
    monkeypatch.setattr(batches, "PROGRESS_EVERY_SECONDS", 0.0)
    batches.batch_execute(batch_id=batch.pk)
    monkeypatch.undo()
    assert seen and seen == sorted(seen) and seen[-1] == batch.total
    done = client.get(f"/b/{batch.pk}/status/", **HTMX)
    assert done.status_code == 204 and done["HX-Redirect"] == f"/b/{batch.pk}/"
    assert client.get(f"/b/{batch.pk}/status/").status_code == 302
    assert login("outsider").get(f"/b/{batch.pk}/").status_code == 404
    assert login("outsider").get(f"/b/{batch.pk}/scores.json").status_code == 404


def test_a_batch_is_cut_into_even_chunks_no_larger_than_the_maximum(settings):
    from audit.services.chunks import chunk_lines, chunk_rows, chunk_size

    settings.BATCH_CHUNK_CASES, settings.BATCH_CHUNKS = 200, 16
    # enough chunks for the processes to finish together; never huge, never tiny
    assert [chunk_size(n) for n in (1400, 16800, 100, 5)] == [88, 200, 20, 20]
    lines = [[n, f'{{"id": "c{n}"}}', None] for n in range(1, 1401)]
    chunks = chunk_rows(lines)
    assert len(chunks) == 16 and {c.total for c in chunks} == {88, 80}
    assert [line for c in chunks for line in chunk_lines(c)] == lines
    assert [c.index for c in chunks] == list(range(16))
    assert all(not c.cases and len(c.packed) < len(str(lines)) / 16 for c in chunks)
    # a chunk stored before the lines were packed is read as it was
    from audit.models import BatchChunk

    assert chunk_lines(BatchChunk(cases=lines[:3], total=3)) == lines[:3]
