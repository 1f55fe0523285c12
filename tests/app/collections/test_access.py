"""Who reads which collection (docs/security.md#roles): an admin every one; an assessor only
the collections holding one of its tasks or a task that routed a second opinion to it. Any
other collection, its queries and its guidelines answer 404, as if it did not exist. On SQLite
and Postgres (the ``api`` fixture runs the module on each backend)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from app.kernel.models import SecondOpinion, utcnow
from app.users import service as users
from tests.app.conftest import Api
from tests.app.judging.support import make_collection, make_task, pool

READS = ("", "/queries", "/guidelines")


@pytest.fixture(scope="module")
def two(api: Api) -> dict[str, Any]:
    """Collections A (a task of ``amy``'s) and B (a task of ``bob``'s only)."""
    api.add_user("amy")
    api.add_user("bob")
    a = make_collection(api, "access-a", pool("qa", 4, query="secret query of A"))
    b = make_collection(api, "access-b", pool("qb", 4, query="secret query of B"))
    make_task(api, a, "qa", "amy", k=2)
    return {"a": a, "b": b, "bob_task": make_task(api, b, "qb", "bob", k=2)}


def _ids(api: Api, user: str) -> set[int]:
    r = api.get(user, "/api/v1/collections")
    assert r.status_code == 200, r.text
    return {c["id"] for c in r.json()}


def test_assessor_lists_and_reads_only_collections_of_its_tasks(
    api: Api, two: dict[str, Any]
) -> None:
    a, b = two["a"], two["b"]
    assert _ids(api, "amy") == {a}
    assert _ids(api, "bob") == {b}
    for tail in READS:
        assert api.get("amy", f"/api/v1/collections/{a}{tail}").status_code == 200, tail
        r = api.get("amy", f"/api/v1/collections/{b}{tail}")
        assert r.status_code == 404, (tail, r.text)
        # The same answer as a collection that does not exist: nothing of B is revealed.
        missing = api.get("amy", f"/api/v1/collections/999999{tail}")
        assert missing.status_code == 404 and r.json() == {
            "detail": f"no collection with id {b}"
        }, r.text
        assert "secret query of B" not in r.text and "access-b" not in r.text
    queries = api.get("amy", f"/api/v1/collections/{a}/queries").json()
    assert [q["title"] for q in queries] == ["secret query of A"]


def test_admin_reads_every_collection(api: Api, two: dict[str, Any]) -> None:
    assert _ids(api, "admin") >= {two["a"], two["b"]}
    for cid in (two["a"], two["b"]):
        for tail in READS:
            assert api.get("admin", f"/api/v1/collections/{cid}{tail}").status_code == 200


def test_assessor_without_tasks_sees_no_collection(api: Api, two: dict[str, Any]) -> None:
    api.add_user("cal")
    assert _ids(api, "cal") == set()
    for tail in READS:
        assert api.get("cal", f"/api/v1/collections/{two['a']}{tail}").status_code == 404


def test_a_second_opinion_opens_its_tasks_collection(api: Api, two: dict[str, Any]) -> None:
    """The assignee of a second opinion judges a pair of the first task's query, so it may
    read that collection's queries and guidelines too (docs/rest-api.md#second-opinions)."""
    api.add_user("dee")
    assert _ids(api, "dee") == set()
    dee = users.get_user(db=api.db, username="dee")
    with api.db.write() as s:
        s.add(
            SecondOpinion(
                task_id=two["bob_task"],
                seq=0,
                left_doc="d000",
                right_doc="d001",
                allowed=["left", "right"],
                assignee_id=dee.id,
                deadline_at=utcnow() + timedelta(minutes=10),
            )
        )
    assert _ids(api, "dee") == {two["b"]}
    for tail in READS:
        assert api.get("dee", f"/api/v1/collections/{two['b']}{tail}").status_code == 200
        assert api.get("dee", f"/api/v1/collections/{two['a']}{tail}").status_code == 404
