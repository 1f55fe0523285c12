"""Second-opinion pages (docs/assessor-guide.md#second-opinions).

The second assessor answers a routed question on the pairwise judging page itself
(``second_opinions/second_opinion.html`` extends ``judging/pairwise.html``; app/static/js/judge/
runs
it against ``/api/v1/second-opinions/{id}``): one question per page, then on to the next open
one, or back to My tasks. The first assessor, while their task waits, gets
``second_opinions/waiting.html`` from the judging page (:mod:`app.web.assess`) with an "Ask me
instead" form posting to ``/tasks/{id}/reclaim`` here.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi import Query as FastApiQuery
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.http.deps import DbDep, require_csrf_form, web_session
from app.http.middleware import FRAME_CSP
from app.kernel.errors import DomainError
from app.second_opinions import service as second_opinions
from app.web import documents, page_data
from app.web.assess import HIGHLIGHT_COOKIE, error_page, highlight_on
from app.web.auth import login_redirect
from app.web.templates import render

router = APIRouter()


@router.get("/second-opinions")
async def next_page(request: Request, db: DbDep) -> Response:
    """The caller's oldest open second opinion, or My tasks when none is open."""
    resolved = await web_session(request, db)
    if resolved is None:
        return login_redirect(request)
    items = await run_in_threadpool(second_opinions.list_items, db=db, user=resolved.user)
    if not items:
        return RedirectResponse("/tasks", status_code=303)
    return RedirectResponse(f"/second-opinions/{items[0]['id']}", status_code=303)


@router.get("/second-opinions/{item_id}")
async def judge_page(request: Request, db: DbDep, item_id: int) -> Response:
    resolved = await web_session(request, db)
    if resolved is None:
        return login_redirect(request)
    try:
        item = await run_in_threadpool(
            second_opinions.get_item, db=db, user=resolved.user, item_id=item_id
        )
    except DomainError as err:
        title = "Not yours" if err.status_code == 403 else "Not found"
        return error_page(
            request, resolved, title=title, message=str(err.detail), status_code=err.status_code
        )
    if item["done"]:
        return RedirectResponse("/second-opinions", status_code=303)
    info = item["second_opinion"]
    highlight = highlight_on(request)
    terms = page_data.highlight_terms(info["query"]) if highlight else frozenset()
    settings = request.app.state.settings
    allowed = item["allowed_outcomes"]
    base = f"/second-opinions/{item_id}"
    boot = {
        "task_id": info["task_id"],
        "api_url": f"/api/v1{base}",
        "store_key": f"second-opinion.{item_id}",
        "method": "topk",
        "k": 0,
        "allow_ties": "tie" in allowed,
        "not_relevant": False,
        "csrf_token": resolved.csrf_token,
        "idle_seconds": settings.idle_pause_seconds,
        "active_ms": 0,
        "done_url": "/second-opinions",
        "login_url": f"/login?next={base}",
        "frame_csp": FRAME_CSP,
        "document_url": f"{base}/document",
        "lookahead_url": f"{base}/lookahead",
        "frames_url": f"{base}/frames",
        "highlight": highlight,
        "highlight_cookie": HIGHLIGHT_COOKIE,
        "question": item,
    }
    progress = item["progress"]
    context = {
        "query": {"title": info["query"], "description": ""},
        "question": item,
        "boot": boot,
        "remaining": progress["estimated_remaining"],
        "progress_pct": 0,
        "idle_seconds": settings.idle_pause_seconds,
        "allow_ties": boot["allow_ties"],
        "not_relevant": False,
        "highlight": highlight,
        "second_opinion": info,
        "left": page_data.doc_view(item["pair"]["left"]).framed(f"{base}/document", terms),
        "right": page_data.doc_view(item["pair"]["right"]).framed(f"{base}/document", terms),
    }
    return render(
        request,
        "second_opinions/second_opinion.html",
        context,
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="tasks",
    )


async def _own_item_terms(
    request: Request, db: Any, item_id: int, hl: int | None
) -> tuple[dict[str, Any] | None, frozenset[str], Response | None]:
    resolved = await web_session(request, db)
    if resolved is None:
        return None, frozenset(), JSONResponse({"detail": "not authenticated"}, status_code=401)
    try:
        item = await run_in_threadpool(
            second_opinions.get_item, db=db, user=resolved.user, item_id=item_id
        )
    except DomainError as err:
        return None, frozenset(), JSONResponse({"detail": err.detail}, err.status_code)
    on = highlight_on(request, hl)
    info = item["second_opinion"]
    return item, (page_data.highlight_terms(info["query"]) if on else frozenset()), None


@router.get("/second-opinions/{item_id}/frames")
async def frames(
    request: Request,
    db: DbDep,
    item_id: int,
    ids: Annotated[list[str], FastApiQuery(max_length=8)],
    hl: int | None = None,
) -> Response:
    """The question's documents among ``ids`` rendered for their frames (only the pair of
    this second opinion: the assignee sees nothing else of the other task)."""
    item, terms, early = await _own_item_terms(request, db, item_id, hl)
    if early is not None:
        return early
    assert item is not None
    shown = _pair_docs(item)
    docs = [page_data.doc_view(shown[d]) for d in dict.fromkeys(ids) if d in shown]
    base = f"/second-opinions/{item_id}/document"
    framed = [d.framed(base, terms).as_json() for d in docs]
    return JSONResponse({"docs": framed}, headers={"Cache-Control": "no-store"})


def _pair_docs(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The documents of a second opinion's question (its pair), by id."""
    pair = item.get("pair") or {}
    return {d["doc_id"]: d for d in pair.values()}


@router.get("/second-opinions/{item_id}/document")
async def document(
    request: Request,
    db: DbDep,
    item_id: int,
    doc: Annotated[str, FastApiQuery(min_length=1, max_length=200)],
    hl: int | None = None,
    v: Annotated[str | None, FastApiQuery(max_length=64)] = None,
) -> Response:
    """One document of the caller's second opinion, as its frame's own response
    (:mod:`app.web.documents`): only the two of its question (the assignee sees nothing else
    of the other assessor's task); 404 otherwise, 403 for another assessor's item."""
    item, terms, early = await _own_item_terms(request, db, item_id, hl)
    if early is not None:
        return documents.uncached(early)
    assert item is not None
    found = _pair_docs(item).get(doc)
    if found is None:
        detail = {"detail": f"second opinion {item_id} does not show a document {doc!r}"}
        return documents.uncached(JSONResponse(detail, status_code=404))
    frame = await run_in_threadpool(page_data.doc_view(found).rendered, terms)
    return documents.document_response(request, frame, v)


@router.get("/second-opinions/{item_id}/lookahead")
async def lookahead(
    request: Request, db: DbDep, item_id: int, seq: int, hl: int | None = None
) -> Response:
    """Nothing to preload: after a second opinion the page moves to the next one."""
    _item, _terms, early = await _own_item_terms(request, db, item_id, hl)
    if early is not None:
        return early
    return JSONResponse({"seq": seq, "docs": [], "next": {}}, headers={"Cache-Control": "no-store"})


@router.post("/tasks/{task_id}/reclaim", dependencies=[Depends(require_csrf_form)])
async def reclaim(request: Request, db: DbDep, task_id: int) -> Response:
    """ "Ask me instead" on the waiting page: the routed question comes back to this task."""
    resolved = await web_session(request, db)
    if resolved is None:
        return login_redirect(request)
    try:
        await run_in_threadpool(second_opinions.reclaim, db=db, user=resolved.user, task_id=task_id)
    except DomainError as err:
        return error_page(
            request,
            resolved,
            title="Not possible",
            message=str(err.detail),
            status_code=err.status_code,
        )
    return RedirectResponse(f"/tasks/{task_id}", status_code=303)
