"""Blind first, in the browser (docs/machine-judges.md#the-service): the judging page of a
question is the same with the machine on and off. Two tasks on the same documents, query text
and seed, ``insertion+assist``, one with a ``bm25`` machine (its scores prepared as at task
creation); the first question of each is a person's (nothing is known yet, so every stake is
high), and the page's DOM under ``#judge-main`` (every element's tag, id, class, attributes
and text) is compared after the task's own id and the progress figures (the remaining-work
estimate is the only part the machine's help may change) are masked."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select

from app.kernel.models import Query, Task
from app.machine.service import prepare_task, save_prepared
from labeling.protocol.spec import format_options, parse_spec
from tests.e2e.web_support import open_task, relevance_docs, seed_task

DOM = """() => Array.from(document.querySelectorAll('#judge-main, #judge-main *')).map(e =>
  [e.tagName, Array.from(e.attributes).map(a => a.name + '=' + a.value).sort().join(' '),
   Array.from(e.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent.trim())
     .join(' ')])"""


def _page(ctx: Any, env: dict[str, Any], task_id: int, collection: str) -> list[list[str]]:
    page = ctx.new_page()
    open_task(page, env, task_id)
    page.wait_for_load_state("networkidle")
    dom: list[list[str]] = page.evaluate(DOM)
    page.close()
    masked = []
    for tag, attrs, text in dom:
        attrs = " ".join(
            a.split("=", 1)[0] + "=ID"
            if "task" in a.split("=", 1)[0] and a.endswith(f"={task_id}")
            else a.replace(f"/tasks/{task_id}", "/tasks/ID")
            for a in attrs.split(" ")
        )
        if "progress" in attrs:
            attrs, text = re.sub(r"\d+", "N", attrs), re.sub(r"\d+", "N", text)
        masked.append([tag, attrs, text.replace(collection, "COLLECTION")])
    return masked


def test_the_judging_page_is_the_same_with_the_machine_on_and_off(
    env: dict[str, Any], ctx: Any
) -> None:
    db = env["db"]
    docs = relevance_docs(10)
    options = {"strategy": "insertion+assist"}
    off = seed_task(
        db, assessor_id=env["user_id"], docs=docs, options=options, seed=3, collection="blind-a"
    )
    on = seed_task(
        db, assessor_id=env["user_id"], docs=docs, options=options, seed=3, collection="blind-b"
    )
    with db.write() as s:
        task = s.scalar(select(Task).where(Task.id == on.task_id))
        query = s.get(Query, on.query_id)
        assert task is not None and query is not None
        opts = {**task.options, "machine": {"source": "bm25"}}
        spec = parse_spec(task.method, opts, k=task.k, seed=task.seed)
        spec, prepared = prepare_task(s, task.collection_id, query, task.doc_ids, spec, db.settings)
        task.options = format_options(spec)
        save_prepared(s, task.id, prepared)
    with_machine = _page(ctx, env, on.task_id, "blind-b")
    without = _page(ctx, env, off.task_id, "blind-a")
    assert any(tag == "ARTICLE" for tag, _, _ in without)
    assert with_machine == without
