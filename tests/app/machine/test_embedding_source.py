"""The ``embedding`` machine source through the service
(docs/machine-judges.md#the-embedding-judge): a task's stored raw scores are the core judge's
(BM25 + the packaged embedding, standardised over the collection), its machine answers carry
the judge's version, and the spec names it; SQLite and Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.kernel.models import Judgment, MachineScore, TaskMachine
from app.retrieval import repository
from labeling.machine.embedding_judge import EmbeddingJudge
from labeling.protocol.spec import EmbeddingSource, parse_source
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.embedding import EmbeddingIndex, load_embedder
from labeling.retrieval.text import document_text
from tests.app.conftest import Api
from tests.app.machine.test_machine_judges import K, create, judge, result
from tests.app.machine_support import machine_collection
from tests.conftest import oracle

N, QUERIES = 24, 3


@pytest.fixture(scope="module")
def coll(api: Api) -> tuple[int, dict[str, dict[str, int]]]:
    oracle("wordllama", "the embedding judge's model ships in the wordllama wheel")
    api.add_user("mia")
    return machine_collection(api, "embedding", queries=QUERIES, docs=N)


def test_the_source_round_trips_through_the_spec() -> None:
    assert parse_source("embedding") == EmbeddingSource()
    assert EmbeddingSource().text == "embedding"


def test_stored_scores_are_the_core_judge_s_and_answers_carry_its_version(
    api: Api, coll: tuple[int, dict[str, dict[str, int]]]
) -> None:
    cid, truth = coll
    with api.db.read() as s:
        # Read inside the session: the repository yields rows lazily.
        docs = [(d, document_text(t, x, h)) for d, t, x, h in repository.distinct_documents(s, cid)]
    bm25 = Bm25Index(docs)
    core = EmbeddingJudge(bm25, EmbeddingIndex(docs, load_embedder()))
    position = {d: i for i, d in enumerate(bm25.doc_ids)}
    for q in range(QUERIES):
        qid = f"q{q}"
        task = create(api, cid, qid, "embedding")
        with api.db.read() as s:
            machine = s.get(TaskMachine, task)
            stored = {
                m.doc_id: m.score for m in s.scalars(select(MachineScore).filter_by(task_id=task))
            }
        assert machine is not None and machine.judge == core.version
        assert machine.judge.startswith("embedding/wordllama/l2_supercat_256/bm25/")
        want = core.scores(f"apple{q}")
        assert set(stored) == set(truth[qid])
        for d, v in stored.items():
            assert v == pytest.approx(float(want[position[d]]), abs=1e-9)
        judge(api, task, truth[qid])
        assert len(result(api, task)["top"]) == K
        with api.db.read() as s:
            answers = list(s.scalars(select(Judgment).filter_by(task_id=task, source="machine")))
        assert all((j.machine_version or "").startswith(core.version) for j in answers)
