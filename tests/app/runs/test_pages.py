"""The runs page over a real app and SQLite file (cookie session + CSRF forms): upload runs,
see the leaderboard (the REST numbers), the matrix, the SVG plots and the agreement; a bad
file comes back with its line and nothing stored; delete; assessors get 403."""

from __future__ import annotations

import re
from typing import Any

from tests.app.runs.support import QUERIES
from tests.app.web.support import hidden_csrf, login, upload_runs


def test_runs_page_upload_leaderboard_matrix_plots(campaign_site: dict[str, Any]) -> None:
    client, cid = campaign_site["client"], campaign_site["cid"]
    login(client, "boss", "boss password 1")
    page = client.get(f"/admin/collections/{cid}/runs")
    assert page.status_code == 200 and "No run yet." in page.text
    upload_runs(client, cid, campaign_site["runs"])
    page = client.get(f"/admin/collections/{cid}/runs", params={"metric": "AP", "against": "qrels"})
    assert page.status_code == 200, page.text
    html = page.text
    # the leaderboard shows the REST leaderboard's means, best first
    from app.runs.evaluation import Scoring, run_leaderboard

    board = run_leaderboard(db=campaign_site["db"], collection_id=cid, scoring=Scoring(metric="AP"))
    shown = re.findall(r'<th scope="row">([a-z]+)</th><td class="num">([0-9.]+)</td>', html)
    assert [(n, float(m)) for n, m in shown] == [
        (r["run"], round(r["mean"], 4)) for r in board["runs"]
    ]
    assert 'data-testid="matrix"' in html and html.count("cell-significant") == sum(
        p["significant"] for p in board["matrix"]["pairs"]
    )
    assert "Kendall's τ <strong>1.0000</strong>" in html
    # the plots inside the page (one mark per query each) and as SVG files
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg"') == 2
    assert html.count("<title>q") == 2 * len(QUERIES)
    srcs = re.findall(r'href="(/admin/collections/\d+/runs/plot\.svg\?[^"]+)"', html)
    assert len(srcs) == 2
    for src in srcs:
        svg = client.get(src.replace("&amp;", "&"))
        assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
        assert svg.text.startswith("<svg") and "<script" not in svg.text
        assert svg.text.count("<title>q") == len(QUERIES)
        assert svg.text in html  # the same drawing
    assert "style=" not in html and "<script>" not in html


def test_more_runs_than_the_cap_the_page_compares_the_first_and_the_picker_chooses(
    campaign_site: dict[str, Any],
) -> None:
    """With more runs than the cap the leaderboard page compares the first ``cap`` by upload
    order and says so (before: the page only showed the cap's refusal); the picker's
    ``compare`` parameters choose the runs; too many chosen, or an unknown run, is the use
    case's refusal on the page (422), nothing else."""
    client, cid, db = campaign_site["client"], campaign_site["cid"], campaign_site["db"]
    login(client, "boss", "boss password 1")
    upload_runs(client, cid, campaign_site["runs"])
    from app.runs import service as runs

    names = runs.run_names(db=db, collection_id=cid)
    assert len(names) >= 4
    cap = 3
    client.app.state.db.settings.compare_max_runs = cap  # type: ignore[attr-defined]

    def board_runs(html: str) -> list[str]:
        return re.findall(r'<th scope="row">([a-z]+)</th><td class="num">', html)

    def checked(html: str) -> list[str]:
        return re.findall(r'name="compare" value="([^"]+)" checked', html)

    page = client.get(f"/admin/collections/{cid}/runs", params={"metric": "AP"})
    assert page.status_code == 200, page.text
    assert sorted(board_runs(page.text)) == sorted(names[:cap])
    assert checked(page.text) == names[:cap]
    note = f"The collection has {len(names)} runs and one comparison takes at most {cap}"
    assert note in page.text and 'data-testid="compare-note"' in page.text
    picked = [names[-1], names[0]]
    page = client.get(f"/admin/collections/{cid}/runs", params={"metric": "AP", "compare": picked})
    assert page.status_code == 200, page.text
    assert sorted(board_runs(page.text)) == sorted(picked)
    assert sorted(checked(page.text)) == sorted(picked) and note not in page.text
    page = client.get(f"/admin/collections/{cid}/runs", params={"compare": names[: cap + 1]})
    assert page.status_code == 422 and f"{cap + 1} runs chosen" in page.text
    assert board_runs(page.text) == []
    page = client.get(f"/admin/collections/{cid}/runs", params={"compare": ["nope"]})
    assert page.status_code == 422 and "no run named &#39;nope&#39;" in page.text
    # Within the cap, every run is compared and ticked, with no note.
    client.app.state.db.settings.compare_max_runs = 50  # type: ignore[attr-defined]
    page = client.get(f"/admin/collections/{cid}/runs", params={"metric": "AP"})
    assert sorted(board_runs(page.text)) == sorted(names) and checked(page.text) == names
    assert 'data-testid="compare-note"' not in page.text


def test_a_bad_upload_comes_back_with_its_line(campaign_site: dict[str, Any]) -> None:
    client, cid = campaign_site["client"], campaign_site["cid"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get(f"/admin/collections/{cid}/runs").text)
    files = [
        ("run", ("good", campaign_site["runs"]["fair"], "text/plain")),
        ("run", ("bad.txt", b"q1 Q0 d00 1 0.5 t\nq1 Q0 d01 2 0.4\n", "text/plain")),
    ]
    r = client.post(f"/admin/collections/{cid}/runs", data={"csrf_token": csrf}, files=files)
    assert r.status_code == 422
    assert "No run was stored." in r.text and "bad.txt, line 2: expected 6 columns" in r.text
    assert "No run yet." in r.text


def test_delete_and_assessors_get_403(campaign_site: dict[str, Any]) -> None:
    client, cid = campaign_site["client"], campaign_site["cid"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get(f"/admin/collections/{cid}/runs").text)
    files = [("run", ("only", campaign_site["runs"]["strong"], "text/plain"))]
    client.post(f"/admin/collections/{cid}/runs", data={"csrf_token": csrf}, files=files)
    page = client.get(f"/admin/collections/{cid}/runs").text
    run_id = re.search(r"/runs/(\d+)/delete", page).group(1)  # type: ignore[union-attr]
    r = client.post(
        f"/admin/collections/{cid}/runs/{run_id}/delete",
        data={"csrf_token": csrf},
        follow_redirects=False,
    )
    assert r.status_code == 303
    assert "No run yet." in client.get(f"/admin/collections/{cid}/runs").text
    client.cookies.clear()
    login(client, "ann", "ann password 1")
    assert client.get(f"/admin/collections/{cid}/runs").status_code == 403
    plot = f"/admin/collections/{cid}/runs/plot.svg?run_a=strong&run_b=fair"
    assert client.get(plot).status_code == 403
    csrf = hidden_csrf(client.get("/tasks").text)
    r = client.post(f"/admin/collections/{cid}/runs", data={"csrf_token": csrf}, files=files)
    assert r.status_code == 403
