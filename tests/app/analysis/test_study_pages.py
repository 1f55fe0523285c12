"""What the collection page, the progress and the analysis say about a study on a larger
collection: the study's queries only, no χ² noise when the test cannot apply, the export form's
default that works and no silent empty export (REST: a 409 saying why).

Oracles: the plan's queries counted by hand, the demo's tasks as written in app/demo.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.analysis.service import collection_analysis
from app.exports import service as exports
from tests.app.admin_support import judge_task, make_collection
from tests.app.analysis.test_analysis_api import _get_as
from tests.app.conftest import Api

USERS = ("sp1", "sp2")
STUDY = ["101", "102", "103"]


@pytest.fixture(scope="module")
def study(api: Api) -> tuple[int, int, dict[str, dict[str, float]]]:
    """Eight text queries of eight documents (no features); a plan on three of them, one
    top-k task finished, no graded task finished."""
    for u in USERS:
        api.add_user(u)
    cid, scores = make_collection(api, "study-pages", queries=8, docs=8, features=False)
    plan = {
        "collection_id": cid,
        "assessors": list(USERS),
        "query_ids": STUDY,
        "shifts": [0],
        "k": 3,
        "name": "pages",
    }
    r = api.post("admin", "/api/v1/admin/plans", json=plan)
    assert r.status_code == 201, r.text
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    task = next(t for t in prog["tasks"] if t["method"] == "topk")
    judge_task(api, task["assessor"], task["id"], scores[task["query_id"]])
    return cid, task["id"], scores


def test_progress_and_analysis_list_the_studys_queries(api: Api, study) -> None:
    cid, _, _ = study
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    assert [q["query_id"] for q in prog["by_query"]] == STUDY  # not the collection's 8
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    assert report["queries"] == STUDY
    collection = _get_as(api, "admin", f"/admin/collections/{cid}").text
    assert "By query (3)" in collection
    page = _get_as(api, "admin", f"/admin/collections/{cid}/analysis").text
    assert "By query (3, the study's)" in page
    assert re.findall(r'<tr><th scope="row">(\d+)</th>', page) == STUDY


def test_chi_square_says_once_why_it_cannot_apply(api: Api, study) -> None:
    cid, _, _ = study
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    # One assessor per method and query: no pair is judged by two assessors.
    assert report["chi2_note"] == "no pair is judged by two assessors with graded tasks yet"
    page = _get_as(api, "admin", f"/admin/collections/{cid}/analysis").text
    assert page.count("No χ² test") == 1 and "undefined" not in page


def test_a_study_without_graded_tasks_and_the_demo(api: Api, tmp_path: Path) -> None:
    cid, _ = make_collection(api, "topk-only", queries=2, docs=5, features=False)
    body = {
        "collection_id": cid,
        "assessors": list(USERS),
        "scheme": "balanced",
        "per_query": {"topk": 2, "graded": 0},
        "k": 2,
    }
    assert api.post("admin", "/api/v1/admin/plans", json=body).status_code == 201
    report = api.get("admin", f"/api/v1/collections/{cid}/analysis").json()
    assert report["chi2_note"] == "the study has no graded tasks"

    from app.demo import ensure_demo
    from app.kernel.db import Database
    from app.kernel.models import Base

    db = Database.from_url(f"sqlite:///{tmp_path / 'demo.db'}")
    Base.metadata.create_all(db.engine)
    try:
        assert ensure_demo(db=db)
        from app.collections.service import get_guidelines, list_collections

        demo = list_collections(db=db, viewer=None)[0]
        assert get_guidelines(db=db, collection_id=demo.id, viewer=None).markdown.strip()
        report = collection_analysis(demo.id, db=db)
        # The demo's tasks: one assessor per (query, method), so no co-judged pair yet.
        assert report["chi2_note"] is not None and report["chi2"]["pearson"]["overall"] is None
    finally:
        db.dispose()


def _select(html: str, name: str) -> str:
    return html.split(f'name="{name}"', 1)[1].split("</select>", 1)[0]


def test_export_form_defaults_to_what_works(api: Api, study) -> None:
    cid, _, _ = study
    html = _get_as(api, "admin", f"/admin/collections/{cid}").text
    formats = _select(html, "format")
    assert '<option value="qrels" selected>' in formats
    assert '<option value="letor" disabled>' in formats  # a text collection: no features
    assert '<option value="letor-parquet" disabled>' in formats
    labels = re.findall(r"<option[^>]*>([^<]*)</option>", formats)
    assert len(labels) == len(exports.FORMATS) and max(len(x) for x in labels) <= 40
    # The grades link is not offered: no graded task is finished; the others are.
    assert f'href="/admin/collections/{cid}/export?format=grades-qrels"' not in html
    assert "qrels of grades: no finished graded tasks yet" in html
    assert f'href="/admin/collections/{cid}/export?format=qrels"' in html
    # The form's default, as the browser sends it, downloads the finished task's labels.
    r = _get_as(api, "admin", f"/admin/collections/{cid}/export?format=qrels&source=first")
    assert r.status_code == 200 and len(r.text.splitlines()) == 8


def _export(api: Api, cid: int, **params: Any) -> Any:
    return api.get("admin", f"/api/v1/collections/{cid}/export", params=params)


def test_an_export_that_would_be_empty_says_so(api: Api, study) -> None:
    cid, _, _ = study
    r = _export(api, cid, format="grades-qrels")
    assert r.status_code == 409
    assert r.json()["detail"] == "nothing to export: no finished graded tasks yet"
    r = _export(api, cid, format="qrels", assessor="sp1", labels="grades")
    assert r.status_code == 409
    assert r.json()["detail"] == "nothing to export: no finished graded tasks of assessor 'sp1' yet"
    r = _export(api, cid, format="letor", missing_features="skip")
    assert r.status_code == 409 and "no feature vectors" in r.json()["detail"]
    empty, _ = make_collection(api, "nothing-yet", queries=1, docs=3, features=False)
    r = _export(api, empty, format="pairs-jsonl")
    assert r.status_code == 409
    assert r.json()["detail"] == "nothing to export: no top-k judgments yet"
    # What has lines still exports.
    assert _export(api, cid, format="qrels").status_code == 200
    assert _export(api, cid, format="pairs-csv").status_code == 200


def test_letor_is_offered_when_the_collection_has_features(api: Api) -> None:
    from app.exports.service import NO_FEATURES, availability

    with_features, _ = make_collection(api, "with-features", queries=1, docs=3, features=True)
    without, _ = make_collection(api, "without-features", queries=1, docs=3, features=False)
    assert availability(db=api.db, collection_id=without)["letor"] == NO_FEATURES
    # Features but no finished task yet: offered, and its export would say why it is empty.
    offered = availability(db=api.db, collection_id=with_features)
    assert offered["letor"] == "no finished top-k tasks yet"
    html = _get_as(api, "admin", f"/admin/collections/{with_features}").text
    assert '<option value="letor">' in _select(html, "format")
