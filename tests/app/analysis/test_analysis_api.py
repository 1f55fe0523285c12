"""``GET /api/v1/collections/{id}/analysis`` and the admin analysis page: auth, modes, errors.

Runs over SQLite and Postgres (the ``api`` fixture of tests/app/conftest.py) with a tiny
simulated study created through the service layer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.analysis.study import StudyConfig, run_simulated_study
from app.auth import sessions
from app.users import service as users
from tests.app.conftest import Api

TINY = StudyConfig(assessors=4, queries=4, docs=6, k=3, seed=11, collection="tiny-study")


@pytest.fixture(scope="module")
def tiny(api: Api) -> dict[str, Any]:
    summary = run_simulated_study(db=api.db, config=TINY)
    api.add_user("carol")  # an assessor with a token, for the 403 cases
    return {"id": summary.collection_id, "summary": summary}


def test_admin_gets_the_analysis(api: Api, tiny: dict[str, Any]) -> None:
    r = api.get("admin", f"/api/v1/collections/{tiny['id']}/analysis")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["collection"] == {"id": tiny["id"], "name": "tiny-study"}
    assert data["mode"] == "direct"
    for key in ("time", "agreement", "chi2", "position_bias", "self_consistency", "transitivity"):
        assert key in data
    graded = data["agreement"]["graded"]["pooled"]
    assert graded["instances"] == TINY.queries * TINY.docs * (TINY.docs - 1) // 2
    assert data["judgments"]["live"] == tiny["summary"].judgments
    inferred = api.get("admin", f"/api/v1/collections/{tiny['id']}/analysis?mode=inferred")
    assert inferred.status_code == 200
    assert inferred.json()["agreement"]["topk"]["pooled"]["instances"] == graded["instances"]
    json.dumps(data)  # plain JSON all the way down (None for undefined values, no NaN)


def test_empty_collection(api: Api, tiny: dict[str, Any]) -> None:
    from app.collections.service import create_collection

    empty = create_collection(db=api.db, name="nothing-judged-yet")
    r = api.get("admin", f"/api/v1/collections/{empty.id}/analysis")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["time"] == {}
    assert data["agreement"]["topk"]["pooled"]["instances"] == 0
    assert data["agreement"]["topk"]["pooled"]["agreement"] is None
    assert data["chi2"]["pearson"] == {"overall": None, "no_tie": None}
    page = _get_as(api, "admin", f"/admin/collections/{empty.id}/analysis")
    assert page.status_code == 200 and "No judgments yet" in page.text


def test_analysis_auth_and_errors(api: Api, tiny: dict[str, Any]) -> None:
    path = f"/api/v1/collections/{tiny['id']}/analysis"
    assert api.client.get(path).status_code == 401
    assert api.client.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
    forbidden = api.get("carol", path)
    assert forbidden.status_code == 403
    assert "detail" in forbidden.json()
    missing = api.get("admin", "/api/v1/collections/999999/analysis")
    assert missing.status_code == 404
    assert "999999" in missing.json()["detail"]
    assert api.get("admin", path + "?mode=sideways").status_code == 422


def _get_as(api: Api, username: str | None, path: str) -> Any:
    """GET ``path`` with a fresh browser session of ``username`` (None: no session)."""
    api.client.cookies.clear()
    if username is not None:
        user = users.get_user(db=api.db, username=username)
        raw, _csrf = sessions.create_web_session(api.db, user)
        api.client.cookies.set(sessions.SESSION_COOKIE, raw)
    try:
        return api.client.get(path, follow_redirects=False)
    finally:
        api.client.cookies.clear()


def test_admin_page(api: Api, tiny: dict[str, Any]) -> None:
    path = f"/admin/collections/{tiny['id']}/analysis"
    anonymous = _get_as(api, None, path)
    assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/login")
    page = _get_as(api, "admin", path)
    assert page.status_code == 200
    html = page.text
    for phrase in ("Table 1", "Table 2", "Table 3", "<svg", "The overall agreement is"):
        assert phrase in html
    for i in range(TINY.queries):  # the per-query table
        assert f'<tr><th scope="row">Q{i + 1:03d}</th>' in html
    assert "script-src 'self'" in page.headers["content-security-policy"]
    # No external assets: the only absolute URL is the SVG namespace.
    assert "http://" not in html.split("<body", 1)[1].replace("http://www.w3.org/2000/svg", "")
    inferred = _get_as(api, "admin", path + "?mode=inferred")
    assert inferred.status_code == 200 and "top-k ground truth" in inferred.text
    assert _get_as(api, "carol", path).status_code == 403
    assert _get_as(api, "admin", "/admin/collections/999999/analysis").status_code == 404


def test_admin_page_shows_the_reask_figures(tmp_path: Path) -> None:
    """With the ``reask_fraction`` option the JSON has re-ask counts (Table 1 ``reasks``,
    ``reasks_per_query``; self-consistency ``reask_repeats``/``reask_consistent``): the page
    shows the same numbers, and the collection page links the analysis. (Its own database:
    the simulated study creates fixed user names.)"""
    import migrations
    from app.kernel.settings import Settings
    from app.main import create_app

    url = f"sqlite:///{tmp_path / 'reask.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, dev=True, public_origin="http://testserver")
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        local = Api(client=client, db=app.state.db, settings=settings)
        local.add_user("admin", role="admin")
        config = StudyConfig(
            assessors=4, queries=4, docs=6, k=3, seed=5, reask_fraction=0.5, collection="re"
        )
        cid = run_simulated_study(db=local.db, config=config).collection_id
        data = local.get("admin", f"/api/v1/collections/{cid}/analysis").json()
        html = _get_as(local, "admin", f"/admin/collections/{cid}/analysis").text
        collection = _get_as(local, "admin", f"/admin/collections/{cid}").text
        empty = local.post("admin", "/api/v1/collections", json={"name": "none"}).json()
        plain = _get_as(local, "admin", f"/admin/collections/{empty['id']}/analysis").text
    topk = data["time"]["topk"]
    assert topk["reasks"] > 0 and data["judgments"]["reasks"] == topk["reasks"]
    assert "Re-asks (not in the other columns)" in html
    cell = html.split('data-testid="reasks-topk">', 1)[1].split("</td>", 1)[0]
    assert cell.startswith(f"{topk['reasks']}<br>")
    assert f"{topk['reasks_per_query']['mean']:.1f} per query" in cell
    assert f"{data['judgments']['reasks']} configured re-asks" in html
    checked = 0
    for sc in data["self_consistency"]:
        cell = html.split(f'data-testid="reask-consistency-{sc["assessor"]}">', 1)[1]
        cell = cell.split("</td>", 1)[0]
        if sc["reask_repeats"]:
            share = 100 * sc["reask_consistent"] / sc["reask_repeats"]
            assert cell == f"{sc['reask_consistent']}/{sc['reask_repeats']} ({share:.1f}%)"
            checked += 1
        else:
            assert cell == "—"
    assert checked > 0
    assert f'href="/admin/collections/{cid}/analysis"' in collection
    # Without re-asks (the paper's protocol) Table 1 keeps the paper's columns.
    assert "Study analysis" in plain and "Re-asks (not in the other columns)" not in plain
