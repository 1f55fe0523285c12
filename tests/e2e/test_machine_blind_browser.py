"""Blind first, in the browser (docs/machine-judges.md#the-service): the judging page of a
question is the same with the machine on and off. Two tasks on the same documents, query text
and seed, ``insertion+assist``, one with a ``bm25`` machine (its scores prepared as at task
creation); the first question of each is a person's (nothing is known yet, so every stake is
high), and the page's DOM under ``#judge-main`` (every element's tag, id, class, attributes
and text) is compared after the task's own id and the progress figures (the remaining-work
estimate is the only part the machine's help may change) are masked.

Then with the machine answering: the machine task's study calibration is frozen with evidence
that trusts it (its stored scores name the oracle's better document), a person judges it in
the browser to the end while the machine answers between the person's questions, and a second
person judges the machine-off task, answering every question (the machine's included) as the
machine task's log did. Every page the first person saw equals, tag for tag and text for text
(the "about N left" estimate and every progress figure unmasked), the machine-off page of the
same seq; no response the judging page read and no page text says "machine", "loss",
"audit" or "probability"."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from sqlalchemy import select, update

from app.kernel.models import Query, Task, TaskMachine, utcnow
from app.machine.judge_repository import save_machine
from app.machine.judges import calibrator_to_json
from app.machine.service import prepare_task, save_prepared
from labeling.machine.calibration import Calibrator
from labeling.machine.trust import StratumEvidence
from labeling.protocol.spec import format_options, parse_spec
from tests.e2e.web_support import (
    live_judgments,
    open_task,
    oracle_scores,
    relevance_docs,
    seed_task,
    shown_pair,
    shown_seq,
    wait_next,
)

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


TEXT = "() => document.body.innerText"
#: The question as shown: DOM's rows of what is visible (not the hidden cards the page keeps
#: for documents seen before or fetched ahead, whose number and order follow the questions
#: this person was asked: the machine takes questions from people, so those differ by design),
#: the question's own cards by side.
SHOWN = """() => {
  const row = e => [e.tagName,
    Array.from(e.attributes).map(a => a.name + '=' + a.value).sort().join(' '),
    Array.from(e.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent.trim())
      .filter(t => t).join(' ')];
  const seen = e => !e.closest('[inert], [hidden], [aria-hidden=true]');
  const all = Array.from(document.querySelectorAll('#judge-main, #judge-main *')).filter(seen);
  const out = all.filter(e => !e.closest('article')).map(row);
  const cards = all.filter(e => e.tagName === 'ARTICLE')
    .sort((a, b) => (a.dataset.slot || '').localeCompare(b.dataset.slot || ''));
  for (const c of cards) {
    out.push(...[c, ...Array.from(c.querySelectorAll('*')).filter(seen)].map(row));
  }
  return out;
}"""
#: Words no assessor may read on the judging page or in what it fetched.
SECRET = re.compile(r"machine|loss|audit|probabilit", re.IGNORECASE)


def _trusted_machine(db: Any, task_id: int, query_id: int, scores: dict[str, float]) -> None:
    """Give the task a machine whose stored scores order the documents as ``scores`` do
    (3 units apart: raw P(better) ≥ σ(3) = 0.95) and freeze a study calibration learned from
    answers that all agreed with it (30 per raw probability on a grid), with the evidence per
    stratum those answers give (docs/machine-judges.md#the-rule)."""
    grid = [i / 100 for i in range(1, 100) if i != 50]
    calibrator = Calibrator("isotonic")
    calibrator.update(
        [p for p in grid for _ in range(30)], [p > 0.5 for p in grid for _ in range(30)]
    )
    # the bound's evidence: the same answers, in every stake class of their bins
    strata = StratumEvidence().with_gold([(p, p > 0.5) for p in grid for _ in range(30)])
    calibration = {**calibrator_to_json(calibrator), "strata": strata.to_dict()}
    with db.write() as s:
        task = s.scalar(select(Task).where(Task.id == task_id))
        query = s.get(Query, query_id)
        assert task is not None and query is not None
        opts = {**task.options, "machine": {"source": "bm25"}}
        spec = parse_spec(task.method, opts, k=task.k, seed=task.seed)
        spec, prepared = prepare_task(s, task.collection_id, query, task.doc_ids, spec, db.settings)
        assert prepared is not None
        task.options = format_options(spec)
        raw = {d: 3.0 * v for d, v in scores.items()}
        save_machine(s, task.id, prepared.source.text, prepared.judge, raw, utcnow())
        s.execute(
            update(TaskMachine)
            .where(TaskMachine.task_id == task.id)
            .values(calibration=calibration, calibrated_at=utcnow())
        )


def _judge(
    ctx: Any, env: dict[str, Any], task_id: int, collection: str, answer: Any
) -> tuple[dict[int, list[list[str]]], list[str]]:
    """Judge the task in the browser to the end, ``answer(seq, left, right)`` naming the
    better side; the masked DOM of every question page by seq and every API response body."""
    page = ctx.new_page()
    bodies: list[str] = []

    def read(response: Any) -> None:
        from playwright.sync_api import Error as PlaywrightError

        if "/api/" in response.url and response.status == 200:
            with contextlib.suppress(PlaywrightError):  # it went on to the done page meanwhile
                bodies.append(response.text())

    page.on("response", read)
    open_task(page, env, task_id)
    pages: dict[int, list[list[str]]] = {}
    while not page.url.endswith("/done"):
        page.wait_for_selector("#judge-main[data-seq]")
        # The last key's brief "pressed" flash has gone (it lasts as long as the answer took).
        page.wait_for_function("() => !document.querySelector('#judge-main .pressed')")
        seq = shown_seq(page)
        dom: list[list[str]] = page.evaluate(SHOWN)
        pages[seq] = [
            [
                tag,
                " ".join(
                    a.split("=", 1)[0] + "=ID"
                    if "task" in a.split("=", 1)[0] and a.endswith(f"={task_id}")
                    else a.replace(f"/tasks/{task_id}", "/tasks/ID")
                    # The "New"/"Moved" marks say what changed since the question this
                    # person saw last; the machine takes questions from people, so their last
                    # question differs by design (this one must not).
                    for a in attrs.split(" ")
                    if a not in ("doc-new", "badge-new", "badge-moved")
                    and not a.startswith("data-pos=")
                ),
                # The assessor's own clock (their time on the task) is theirs, not the task's.
                "CLOCK"
                if "id=clock-time" in attrs
                else "BADGE"
                if "doc-badge" in attrs
                else text.replace(collection, "COLLECTION"),
            ]
            for tag, attrs, text in dom
        ]
        assert not SECRET.search(page.evaluate(TEXT))
        left, right = shown_pair(page)
        page.keyboard.press("ArrowLeft" if answer(seq, left, right) else "ArrowRight")
        wait_next(page, seq)
    page.close()
    return pages, bodies


def test_with_the_machine_answering_every_page_and_estimate_is_the_machine_off_one(
    env: dict[str, Any], ctx: Any
) -> None:
    db = env["db"]
    docs = relevance_docs(10, prefix="e")
    truth = oracle_scores([d["doc_id"] for d in docs], seed=31)
    options = {"strategy": "insertion+assist"}
    off = seed_task(
        db, assessor_id=env["user_id"], docs=docs, options=options, seed=4, collection="blind-c"
    )
    on = seed_task(
        db, assessor_id=env["user_id"], docs=docs, options=options, seed=4, collection="blind-d"
    )
    _trusted_machine(db, on.task_id, on.query_id, truth)

    on_pages, on_bodies = _judge(
        ctx, env, on.task_id, "blind-d", lambda _s, left, right: truth[left] > truth[right]
    )
    log = {j.seq: j for j in live_judgments(db, on.task_id)}
    machine_seqs = {seq for seq, j in log.items() if j.source == "machine"}
    assert machine_seqs, "the machine answered nothing: the comparison would be vacuous"
    assert set(on_pages) == set(log) - machine_seqs  # the person saw every other question

    def as_logged(seq: int, left: str, right: str) -> bool:
        j = log[seq]
        assert (j.left_doc, j.right_doc) == (left, right)  # the same question, same sides
        return j.outcome == "left"

    off_pages, _ = _judge(ctx, env, off.task_id, "blind-c", as_logged)
    assert set(off_pages) == set(log)
    for seq, shown in on_pages.items():
        assert shown == off_pages[seq], f"the page of seq {seq} differs with the machine on"
    estimates = [
        text for page in on_pages.values() for _, attrs, text in page if "progress" in attrs
    ]
    assert any(re.search(r"\d", t) for t in estimates)  # the estimate was compared, unmasked
    for body in on_bodies:
        assert not SECRET.search(body), body[:300]
    # Every question after the first (which comes with the page itself) was read over REST.
    assert len(on_bodies) >= len(on_pages) - 1
