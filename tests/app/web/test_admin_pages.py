"""Admin pages over a real app and SQLite file (TestClient, cookie session + CSRF forms):
create a collection, import, plan, watch progress move, export; assessors get 403."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from app.collections import service as collections
from tests.app.web.support import DOCS, QRELS, TOPICS, hidden_csrf, login, trec_collection


def test_admin_workflow_in_pages(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    home = client.get("/admin")
    assert home.status_code == 200 and "Collections" in home.text
    csrf = hidden_csrf(home.text)
    # Create a collection and import TREC topics + JSONL documents + qrels (multipart form with
    # the CSRF field).
    cid = trec_collection(client, csrf, "study")
    # A corrupted file is rejected with its line, and nothing more is stored.
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec"},
        files={
            "topics": ("topics.txt", TOPICS, "text/plain"),
            "documents": ("docs.jsonl", DOCS + b"{oops\n", "application/json"),
            "qrels": ("qrels.txt", QRELS, "text/plain"),
        },
    )
    # Errors as a list item with file and line; the form keeps its values.
    assert r.status_code == 422
    assert "Nothing was imported" in r.text and "<li>docs.jsonl, line 7: " in r.text
    assert (
        collections.get_collection(db=admin_site["db"], collection_id=cid, viewer=None).documents
        == 12
    )
    # Plan: preview (grid), then create.
    plan = {
        "csrf_token": csrf,
        "assessors": ["ann", "ben", "cat", "dan"],
        "scheme": "rotation",
        "shifts": "0",
        "k": "2",
        "opt_pair_cache": "1",
        "pool_mode": "all",
        "seed": "1",
        "name": "pilot",
    }
    refused = client.post(f"/admin/collections/{cid}/plan", data=plan)
    # The rotation needs as many queries as assessors: 2 queries for 4 assessors is refused.
    assert "The plan was not created" in refused.text
    assert "at least as many queries as assessors" in refused.text
    balanced = {**plan, "scheme": "balanced", "per_topk": "1", "per_graded": "1"}
    preview = client.post(f"/admin/collections/{cid}/plan", data=balanced)
    assert preview.status_code == 200
    assert "Plan preview: pilot" in preview.text and "Create 4 tasks" in preview.text
    created = client.post(f"/admin/collections/{cid}/plan", data={**balanced, "create": "1"})
    assert "Created 4 tasks (plan &#39;pilot&#39;)" in created.text


def test_rotation_plan_and_progress_fragment(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    r = client.post("/admin/collections", data={"name": "rot", "csrf_token": csrf})
    cid = int(re.search(r"/admin/collections/(\d+)/progress-fragment", r.text).group(1))
    topics = b"".join(b"<top>\n<num> %d\n<title> q%d\n</top>\n" % (q, q) for q in range(1, 9))
    qrels = b"".join(b"%d 0 d%d 1\n" % (q, i) for q in range(1, 9) for i in range(6))
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec"},
        files={
            "topics": ("t.txt", topics, "text/plain"),
            "documents": ("d.jsonl", DOCS, "application/json"),
            "qrels": ("q.txt", qrels, "text/plain"),
        },
    )
    assert "Imported 48 query–document pairs" in r.text
    plan = {
        "csrf_token": csrf,
        "assessors": ["ann", "ben", "cat", "dan"],
        "scheme": "rotation",
        "shifts": "0,2",
        "k": "2",
        "pool_mode": "all",
        "name": "rot",
    }
    preview = client.post(f"/admin/collections/{cid}/plan", data=plan)
    assert "All constraints hold" in preview.text and "Create 32 tasks" in preview.text
    # With a machine judge, the chosen +assist row has its "with the machine" row beside it:
    # no measured calibration yet, so a cold start's range, and the expected loss.
    assisted = client.post(
        f"/admin/collections/{cid}/plan",
        data={**plan, "strategy": "insertion+assist", "machine": "bm25"},
    )
    assert assisted.status_code == 200
    assert assisted.text.count('data-machine="1"') == 1
    assert "insertion+assist with the machine" in assisted.text
    assert 'id="plan-machine-model"' in assisted.text and "pairwise accuracy 0.8" in assisted.text
    assert "no measured calibration on this collection yet" in assisted.text
    assert 'id="plan-machine-loss"' in assisted.text and "(max loss 0.01)" in assisted.text
    assert 'data-machine="1"' not in preview.text
    created = client.post(f"/admin/collections/{cid}/plan", data={**plan, "create": "1"})
    assert "Created 32 tasks" in created.text
    fragment = client.get(f"/admin/collections/{cid}/progress-fragment")
    assert fragment.status_code == 200
    assert 'data-testid="judgments-total">0<' in fragment.text
    assert "32 pending" in fragment.text
    # The export API answers the cookie session (GET, admin); nothing is judged yet, so the
    # pairs CSV says so (409) and the page shows the reason instead of its link.
    csv_resp = client.get(f"/api/v1/collections/{cid}/export?format=pairs-csv")
    assert csv_resp.status_code == 409
    assert csv_resp.json()["detail"] == "nothing to export: no top-k judgments yet"
    page = client.get(f"/admin/collections/{cid}").text
    assert "pairs CSV: no top-k judgments yet" in page and "?format=pairs-csv" not in page


def test_assessor_gets_403_on_admin_pages(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "ann", "ann password 1")
    csrf = hidden_csrf(client.get("/tasks").text)
    for path in ("/admin", "/admin/collections/1", "/admin/collections/1/progress-fragment"):
        assert client.get(path).status_code == 403, path
    for path in (
        "/admin/collections",
        "/admin/collections/1/settings",
        "/admin/collections/1/import",
        "/admin/collections/1/plan",
        "/admin/users",
        "/admin/users/ben/disable",
    ):
        r = client.post(path, data={"csrf_token": csrf, "name": "x"})
        assert r.status_code == 403, path
    # Without the CSRF field, an admin's form post is refused too.
    client.cookies.clear()
    login(client, "boss", "boss password 1")
    assert client.post("/admin/collections", data={"name": "nocsrf"}).status_code == 403
    anonymous = TestClient(client.app, base_url="http://testserver")
    assert anonymous.get("/admin", follow_redirects=False).status_code == 303


def _hidden_fields(html: str) -> list[tuple[str, str]]:
    """The preview page's "Create tasks" form fields (as a browser would re-post them)."""
    import html as html_mod

    form = html.split('name="create" value="1"')[0].rsplit("<form", 1)[1]
    return [
        (html_mod.unescape(n), html_mod.unescape(v))
        for n, v in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', form)
    ]


def test_plan_pooled_from_an_uploaded_run(admin_site: dict[str, Any]) -> None:
    """The plan form's run upload + depth: same semantics as REST/CLI (top n of the run that
    the query has, ranked by score as trec_eval does), CSRF-protected, errors on the page."""
    from sqlalchemy import select

    from app.kernel.models import Query, Task

    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = trec_collection(client, csrf, "pooled")
    page = client.get(f"/admin/collections/{cid}")
    assert 'name="pool_run"' in page.text and 'name="run_depth"' in page.text
    assert 'enctype="multipart/form-data" class="stack" id="plan-form"' in page.text
    # Scores decide the order (rank column ignored); d9 is unknown to the collection and
    # skipped; query 2's run lists d5 and d0 only. CRLF line ends, as browsers send text.
    run = (
        b"1 Q0 d3 1 0.2 sys\r\n1 Q0 d9 2 9.0 sys\r\n1 Q0 d1 3 0.9 sys\r\n"
        b"1 Q0 d4 4 0.5 sys\r\n1 Q0 d0 5 0.1 sys\r\n2 Q0 d5 1 0.3 sys\r\n2 Q0 d0 2 0.4 sys\r\n"
    )
    plan = {
        "csrf_token": csrf,
        "assessors": ["ann", "ben"],
        "scheme": "balanced",
        "per_topk": "1",
        "per_graded": "1",
        "k": "2",
        "opt_pair_cache": "1",
        "pool_mode": "run",
        "run_depth": "3",
        "run_order": "1",
        "pool_n": "50",  # the sample size field is ignored for a run pool
        "seed": "1",
        "name": "pooled",
    }
    url = f"/admin/collections/{cid}/plan"
    files = {"pool_run": ("run.txt", run, "text/plain")}
    preview = client.post(url, data=plan, files=files)
    assert preview.status_code == 200, preview.text
    assert "Pool: top 3 of the uploaded run; T1 prior run. Documents per query: 2" in preview.text
    assert "Create 4 tasks" in preview.text
    # "Create tasks" re-posts the fields with the run's text (a file cannot be re-posted).
    fields = _hidden_fields(preview.text)
    assert ("pool_run_text", run.decode()) in fields
    assert all(name != "pool_run" for name, _v in fields)
    repost: dict[str, list[str]] = {"csrf_token": [csrf], "create": ["1"]}
    for name, value in fields:
        repost.setdefault(name, []).append(value)
    created = client.post(url, data=repost)
    assert "Created 4 tasks (plan &#39;pooled&#39;)" in created.text
    with admin_site["db"].read() as s:
        qids = dict(s.execute(select(Query.id, Query.external_id)).all())
        tasks = list(s.scalars(select(Task).where(Task.collection_id == cid)))
    assert len(tasks) == 4
    pools = {qids[t.query_id]: t.doc_ids for t in tasks}
    assert pools == {"1": ["d1", "d4", "d3"], "2": ["d0", "d5"]}
    topk = [t for t in tasks if t.method == "topk"]
    assert all(t.options["initial_order"] == pools[qids[t.query_id]] for t in topk)

    # Errors are shown on the page, nothing is created, never a 500.
    def refused(data: dict[str, Any], upload: bytes | None, needle: str) -> None:
        up = {"pool_run": ("bad-run.txt", upload, "text/plain")} if upload is not None else None
        r = client.post(url, data={**data, "name": "bad"}, files=up)
        assert r.status_code == 422 and "The plan was not created" in r.text, r.text
        assert needle in r.text, r.text

    fresh = {**plan, "assessors": ["cat", "dan"]}
    refused(fresh, None, "pool mode &#39;run&#39; needs a TREC run")
    refused(fresh, b"1 Q0 d1 1 0.5 sys\n1 Q0 d2 x 0.4 sys\n", "run, line 2: rank &#39;x&#39;")
    refused(fresh, b"1 Q0 d1 1 0.5 sys\n\xff\xfe\n", "bad-run.txt:2: the run is not UTF-8")
    refused({**fresh, "run_depth": "three"}, run, "run_depth must be an integer")
    refused({**fresh, "run_depth": "0"}, run, "pool size n must be at least 1")
    for data in (fresh, {**fresh, "create": "1"}):
        refused(data, b"", "needs a TREC run")
    with admin_site["db"].read() as s:
        assert len(list(s.scalars(select(Task.id).where(Task.collection_id == cid)))) == 4
    # Without the CSRF field the upload is refused.
    no_csrf = {k: v for k, v in plan.items() if k != "csrf_token"}
    assert client.post(url, data=no_csrf, files=files).status_code == 403


def test_guidelines_block_previews_saves_and_refuses(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    db = admin_site["db"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    r = client.post("/admin/collections", data={"name": "rules", "csrf_token": csrf})
    found = re.search(r"/admin/collections/(\d+)", str(r.url))
    assert found is not None, r.text
    cid = int(found[1])
    url = f"/admin/collections/{cid}/guidelines"
    page = client.get(f"/admin/collections/{cid}").text
    assert 'id="guidelines-form"' in page and "No guidelines yet." in page
    source = "**Bold** rule\n\n<script>alert(1)</script>\n\n[x](javascript:alert(2))"
    # Preview: the sanitised HTML on the page, nothing stored.
    r = client.post(url, data={"csrf_token": csrf, "action": "preview", "markdown": source})
    assert r.status_code == 200
    assert "Preview (not saved yet)" in r.text and "<strong>Bold</strong> rule" in r.text
    assert "<script>alert(1)" not in r.text and "&lt;script&gt;alert(1)" in r.text
    assert 'href="javascript' not in r.text
    assert collections.get_guidelines(db=db, collection_id=cid, viewer=None).markdown == ""
    # Without the CSRF field: refused, nothing stored.
    r = client.post(url, data={"action": "save", "markdown": source})
    assert r.status_code == 403
    assert collections.get_guidelines(db=db, collection_id=cid, viewer=None).markdown == ""
    # Bad input: refused on the page with the text kept, never a 500.
    r = client.post(url, data={"csrf_token": csrf, "action": "save", "markdown": "a\x00b"})
    assert r.status_code == 422 and "The guidelines were not saved." in r.text
    r = client.post(url, data={"csrf_token": csrf, "action": "drop", "markdown": "x"})
    assert r.status_code == 422
    assert collections.get_guidelines(db=db, collection_id=cid, viewer=None).markdown == ""
    # Save (browsers post CRLF): stored with LF, shown as assessors see them.
    r = client.post(
        url,
        data={"csrf_token": csrf, "action": "save", "markdown": source.replace("\n", "\r\n")},
        follow_redirects=False,
    )
    assert r.status_code == 303
    assert collections.get_guidelines(db=db, collection_id=cid, viewer=None).markdown == source
    page = client.get(f"/admin/collections/{cid}").text
    assert "As assessors see them" in page and "<strong>Bold</strong> rule" in page
    missing = {"csrf_token": csrf, "action": "save", "markdown": "x"}
    assert client.post("/admin/collections/999/guidelines", data=missing).status_code == 404


def test_user_forms_check_what_the_server_enforces(admin_site: dict[str, Any]) -> None:
    """The username ``pattern`` and the password ``minlength`` come from the server's rules
    (labeling/identifiers.py, app/auth/passwords.py); the pattern compiles under JavaScript's
    ``v`` flag, which the browser uses (tests/e2e/test_page_console.py runs it in Chromium)."""
    from app.auth.passwords import MIN_PASSWORD_CHARS
    from labeling.identifiers import USERNAME_HTML_PATTERN, USERNAME_RE

    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    page = client.get("/admin").text
    assert f'pattern="{USERNAME_HTML_PATTERN}"' in page
    assert page.count(f'minlength="{MIN_PASSWORD_CHARS}"') == 6  # new user + 5 resets
    assert 'minlength="8"' not in page
    # Under the v flag a class must escape "-" (and "(", ")", "[", "]", "{", "}", "/", "|").
    body = USERNAME_HTML_PATTERN[1 : USERNAME_HTML_PATTERN.index("]")]
    assert not re.search(
        r"(?<!\\)[-()\[\]{}/|]", body.replace("A-Z", "").replace("a-z", "").replace("0-9", "")
    )
    assert USERNAME_RE.match("ann.b-c@d_e") and not USERNAME_RE.match("ann b")
