"""Pair opinions prepared ahead by a job, for judges that are too slow to ask in a judging
request (an LLM; docs/machine-judges.md#the-service).

:func:`prepare_pair_opinions` runs in a worker (the ``opinions`` queue, :mod:`app.judging.jobs`): it
replays the task's log with the real judge behind the task's frozen calibration and looks
ahead: it lets the machine answer what it may (in memory, nothing is stored in the log) and,
at each person's question, takes the machine's preferred side as the person's answer, for up
to ``lookahead`` person questions. Every ordered pair the judge was asked about on the way
(the pending question, the questions after it) gets its raw P(first better) stored in
``machine_opinion`` (:func:`app.machine.service.store_pair_opinions`); the judging loop then
reads them (:func:`app.machine.service.refresh_opinions`). A pair the job has not reached has
no opinion, and a person answers it.
"""

from __future__ import annotations

import logging
import math

from app.judging.loop import replay, uses_machine
from app.judging.repository import JudgmentStore
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.machine import health, judges
from app.machine import service as machines
from app.machine.judges import StoredJudge
from labeling.machine.judges import JudgeQuery, PairJudge
from labeling.machine.opinion import JudgeOpinion
from labeling.protocol.spec import parse_machine
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import PairAnswer, PairQuestion
from labeling.retrieval.text import document_text

log = logging.getLogger("heapjudge.machine.opinions")
#: Person questions the job looks ahead by default.
LOOKAHEAD = 8
#: Person questions a job looks ahead while the task's machine alarm is open (a probe).
PROBE_LOOKAHEAD = 1
#: After every this many of the people's answers the job is asked for more opinions anyway.
REFILL_EVERY = LOOKAHEAD // 2


def prepare_llm_opinions(*, db: Database, task_id: int, lookahead: int = LOOKAHEAD) -> int:
    """The queue's job for an ``llm`` task: :func:`prepare_pair_opinions` with the LLM pair
    judge over the task's documents (:func:`app.machine.judges.llm_pair_judge`), asking
    through the task's study's client (:func:`app.machine.judges.llm_client`: cache, token
    budget, retries). A judge whose version is not the task's (the model or template changed
    since the task was created) stores nothing: people answer, the log stays one judge's.
    The job's calls are counted on the task, and a job whose every call failed (or whose
    judge cannot be made, e.g. no model set where the worker runs) raises the task's machine
    alarm (:func:`app.machine.health.record_task_calls`) instead of a traceback."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = store.task(task_id)
        if task is None:
            raise NotFound(f"no task {task_id}")
        docs = store.documents(task.query_id, list(task.doc_ids))
    texts = {d: document_text(r.title, r.text, r.html) for d, r in docs.items()}
    machine = parse_machine(task.options.get("machine"))
    recorded = None if machine is None else machine.judge
    try:
        client = judges.llm_client(db, task_id)
    except Invalid as err:
        log.warning("task %s: the llm judge cannot be made: %s", task_id, err.detail)
        health.record_task_calls(db, task_id, None, error=f"not configured: {err.detail}")
        return 0
    with client:
        judge = judges.llm_pair_judge(texts, client)
        if judge.version != recorded:
            log.warning(
                "task %s was created with judge %s, not %s: no opinions",
                task_id,
                recorded,
                judge.version,
            )
            return 0
        if health.is_failing(db, task_id):  # every call failed last time: only probe
            lookahead = min(lookahead, PROBE_LOOKAHEAD)
        try:
            return prepare_pair_opinions(db=db, task_id=task_id, judge=judge, lookahead=lookahead)
        finally:
            health.record_task_calls(db, task_id, client.report)


def request_opinions(db: Database, task_id: int, session: object) -> bool:
    """After a commit of the judging loop: ask the job queue for more of an ``llm`` task's
    opinions when :func:`wants_opinions` says they ran out (``db.want_opinions``, installed
    by the composition root). Never fails the person's request: a queue that cannot be
    reached is logged, and the next answer asks again. Whether it asked."""
    if db.want_opinions is None or not wants_opinions(session):
        return False
    try:
        db.want_opinions(task_id)
    except Exception:  # the person's answer is stored; the queue is best effort
        log.exception("could not ask for task %s's machine opinions", task_id)
        return False
    return True


def wants_opinions(session: object) -> bool:
    """After a person's answer on an ``llm`` task: whether the job should prepare more
    opinions (docs/machine-judges.md#the-service). The rule, cheap and in memory: the
    session's pending person question is a pair without a stored opinion (either order: the
    opinions ahead ran out, or the people went another way than the judge), or the people's
    answer count is a multiple of :data:`REFILL_EVERY` (half the look-ahead: the opinions are
    topped up before they run out along the judge's path). The claim in
    :func:`app.judging.jobs.enqueue_opinions` keeps it to one pending job per task."""
    if not isinstance(session, TopKSession) or session.done:
        return False
    machine = session.machine
    if not isinstance(machine, JudgeOpinion) or not isinstance(machine.judge, StoredJudge):
        return False
    if not machine.judge.version.startswith("llm/"):
        return False
    q = session.pending
    if not isinstance(q, PairQuestion):
        return False
    if session.human_judgments % REFILL_EVERY == 0:
        return True
    opinions = machine.judge.opinions
    return (q.left, q.right) not in opinions and (q.right, q.left) not in opinions


def prepare_pair_opinions(
    *, db: Database, task_id: int, judge: PairJudge, lookahead: int = LOOKAHEAD
) -> int:
    """Ask ``judge`` about the pairs task ``task_id`` may ask next and store its raw
    opinions (module docstring); how many new pairs were stored."""
    with db.raw_write() as cursor:  # a write: the study calibration may be frozen now
        store = JudgmentStore(db, cursor)
        task = store.task(task_id)
        if task is None or not uses_machine(task):
            raise NotFound(f"no task {task_id} with a machine")
        frozen = machines.task_opinion(db, cursor, task)
        rows = store.live_log(task_id)
        text = store.query_text(task.query_id).title
    assert frozen is not None and frozen.calibrator is not None
    opinion = JudgeOpinion(
        judge,
        JudgeQuery(str(task.query_id), text),
        frozen.calibrator,
        prior_audits=frozen.prior_audits,
        stratum_evidence=frozen.stratum_evidence,
    )
    session = replay(task, rows, opinion).session
    assert isinstance(session, TopKSession)
    for _ in range(lookahead):
        session.let_machine_answer()
        q = session.pending
        if not isinstance(q, PairQuestion):
            break
        p = opinion.probability(q.left, q.right)
        session.submit(PairAnswer(q.left, q.right, "left" if p is None or p >= 0.5 else "right"))
    found = {pair: p for pair, p in opinion.raw.items() if not math.isnan(p)}
    prompt_hash = getattr(getattr(judge, "template", None), "hash", None)
    return machines.store_pair_opinions(
        db=db, task_id=task_id, opinions=found, prompt_hash=prompt_hash
    )
