"""trec_eval's judgment formats (``trec-prefs``, ``qrels-jg``): the pairwise answers of top-k
tasks as a ``prefs`` file (``heapjudge trec-eval -R prefs``), and the grades (or κ-labels) of
every task as a ``qrels_jg`` file (``heapjudge trec-eval -R qrels_jg``).

A **judgment group** (trec_eval's ``jg``: "preferences for a single information need of a
user at a single time", consistent within, free to disagree across; ``formats.c``) is, for
heapjudge, one judge's answers in one task (docs/trec-eval.md#prefs):

* ``t<task>``: the answers of the task's assessor;
* ``t<task>.u<user id>``: the answers a second assessor gave to questions routed from the
  task (docs/noise.md), another person;
* ``t<task>.m``: a machine judge's answers (``labels=hybrid``, the default; ``labels=human``
  leaves them out);
* ``<group>.c<n>``: an answer that contradicts the group's earlier answers (a re-ask answered
  the other way, or an answer closing a cycle) is a group of its own
  (:func:`ranking.trec_eval.prefs_export.separate_contradictions`): trec_eval aborts on an
  inconsistent group, and dropping the answer would hide the disagreement.

Each answer "left" or "right" is a sub-group of two documents (winner at rel_level 2, loser
at 1); ties, "not relevant" answers (which remove a challenger and compare nothing,
:func:`labeling.analysis.agreement.relation_from_outcome`) and broken-document reports are not
preferences and are left out. In ``qrels-jg`` the group of a task's labels is ``t<task>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app.exports import repository
from app.exports.lines import batched, refuse_ids, unsafe_in_columns
from app.exports.qrels import qrels_rows
from app.exports.selection import Selection, chosen_tasks
from app.kernel.db import Database
from ranking.trec_eval.prefs_export import Preference, prefs_lines, separate_contradictions

#: The outcomes that state a preference.
PREFERENCE_OUTCOMES = ("left", "right")


def judgment_group(task_id: int, source: str, answered_by: int | None) -> str:
    """The judgment group of one answer of task ``task_id`` (the module's docstring)."""
    if source == "machine":
        return f"t{task_id}.m"
    if answered_by is not None:
        return f"t{task_id}.u{answered_by}"
    return f"t{task_id}"


def _unsafe_query(qid: str) -> str | None:
    if unsafe_in_columns(qid):
        return "query id with whitespace or empty"
    if qid.startswith("#"):
        return "query id starting with '#' (a comment line)"
    return None


def _answers(s: Any, req: Selection) -> Iterator[tuple[int, Preference]]:
    """``(task id, preference)`` of every live left/right answer of the selected top-k
    tasks, in task and seq order; people's only with ``labels=human``."""
    human = req.labels == "human"
    for j, _seed, qid, _username, _second in repository.topk_judgments(
        s, req.collection_id, assessor=req.assessor, plan=req.plan
    ):
        if j.outcome not in PREFERENCE_OUTCOMES or (human and j.source == "machine"):
            continue
        winner, loser = (
            (j.left_doc, j.right_doc) if j.outcome == "left" else (j.right_doc, j.left_doc)
        )
        group = judgment_group(j.task_id, j.source, j.answered_by)
        yield j.task_id, Preference(qid, winner, loser, group)


def _check_prefs_ids(db: Database, req: Selection) -> None:
    """Refuse ids a ``prefs`` line cannot carry (422 naming them), before the first byte."""
    bad: dict[str, str] = {}
    with db.read() as s:
        for _task, pref in _answers(s, req):
            if why := _unsafe_query(pref.query):
                bad.setdefault(pref.query, why)
            for doc in (pref.winner, pref.loser):
                if unsafe_in_columns(doc):
                    bad.setdefault(doc, "document id with whitespace or empty")
    refuse_ids(req.format, bad)


def write_trec_prefs(db: Database, req: Selection) -> Iterator[bytes]:
    """``qid jg jsg docno rel_level`` lines, one task at a time (its groups closed before the
    next task starts, so memory holds one task's answers)."""
    _check_prefs_ids(db, req)

    def task_lines(prefs: list[Preference]) -> Iterator[str]:
        for line in prefs_lines(separate_contradictions(prefs)):
            yield line + "\n"

    def lines() -> Iterator[str]:
        with db.read() as s:
            current: int | None = None
            prefs: list[Preference] = []
            for task_id, pref in _answers(s, req):
                if task_id != current and prefs:
                    yield from task_lines(prefs)
                    prefs = []
                current = task_id
                prefs.append(pref)
            if prefs:
                yield from task_lines(prefs)

    return batched(lines())


def _check_qrels_jg_ids(db: Database, req: Selection) -> None:
    bad: dict[str, str] = {}
    with db.read() as s:
        for task, qid, _ in chosen_tasks(s, req):
            if why := _unsafe_query(qid):
                bad.setdefault(qid, why)
            for doc in task.doc_ids:
                if unsafe_in_columns(doc):
                    bad.setdefault(doc, "document id with whitespace or empty")
    refuse_ids(req.format, bad)


def write_qrels_jg(db: Database, req: Selection) -> Iterator[bytes]:
    """``qid jg docno rel``: every selected finished task's labels (grades by default, or
    κ-labels), one judgment group ``t<task>`` per task; trec_eval's ``qrels_jg`` measures
    (``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``) average over the groups. ``req``
    selects every task (``source="all"``: the registry's writer sets it)."""
    if req.source != "all":
        raise ValueError("qrels-jg writes every task; the request must have source='all'")
    _check_qrels_jg_ids(db, req)
    lines = (f"{q} t{task} {d} {label}\n" for q, task, d, label in qrels_rows(db, req))
    return batched(lines)
