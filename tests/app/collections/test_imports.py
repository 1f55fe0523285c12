"""Admin imports through the service: Cranfield, MQ2008 features, TREC files; all or nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.collections import service as collections
from app.collections.attach import attach_features, attach_grades
from app.collections.imports import AdminImportReport, import_files
from app.collections.ndjson import document_content_hash
from app.collections.uploads import UploadedFile
from app.kernel.errors import Invalid, PayloadTooLarge
from app.kernel.models import Document, Query
from tests.app.admin_support import ndjson
from tests.app.conftest import Api


def _counts(api: Api, cid: int) -> tuple[int, int]:
    s = collections.get_collection(db=api.db, collection_id=cid, viewer=None)
    return s.queries, s.documents


def _new(api: Api, name: str) -> int:
    return collections.create_collection(db=api.db, name=name).id


def _import_cranfield(
    api: Api,
    cid: int,
    cran: Path,
    *,
    documents: bytes | None = None,
    queries: Path | None = None,
    pairing: str = "qrels",
    unjudged_grade: int | None = None,
    ignore_unknown_qrels: bool = False,
) -> AdminImportReport:
    """Import the Cranfield SMART files (``cran.all.1400``, ``cran.qry``, ``cranqrel``) into
    collection ``cid``; ``documents``/``queries`` replace the first two files."""
    return import_files(
        db=api.db,
        collection_id=cid,
        kind="smart",
        files={
            "documents": UploadedFile("cran.all.1400", documents or cran / "cran.all.1400"),
            "queries": UploadedFile(
                queries.name if queries else "cran.qry", queries or cran / "cran.qry"
            ),
            "qrels": UploadedFile("cranqrel", cran / "cranqrel"),
        },
        qrels_format="cranfield",
        pairing=pairing,
        unjudged_grade=unjudged_grade,
        ignore_unknown_qrels=ignore_unknown_qrels,
        max_bytes=0,
    )


def test_cranfield_import(api: Api, shared_data: Path) -> None:
    cran = shared_data / "cranfield"
    cid = _new(api, "cranfield")
    report = _import_cranfield(api, cid, cran)
    assert report.queries_created == 225
    assert report.documents_created == 1837  # the judged (query, document) pairs
    with api.db.read() as s:
        qids = list(
            s.scalars(
                select(Query.external_id).where(Query.collection_id == cid).order_by(Query.id)
            )
        )
        assert qids == [str(i) for i in range(1, 226)]
        grades = dict(
            s.execute(
                select(Document.grade, func.count())
                .where(Document.collection_id == cid)
                .group_by(Document.grade)
            ).all()
        )
        # rel = 5 - code: code 1 (128) -> 4, ..., code 4 (363) -> 1, -1 (225) -> 0.
        assert grades == {4: 128, 3: 387, 2: 734, 1: 363, 0: 225}
        q2 = s.scalar(select(Query).where(Query.collection_id == cid, Query.external_id == "2"))
        assert q2 is not None and q2.title.startswith("what are the structural and aeroelastic")
        best = dict(
            s.execute(
                select(Document.external_id, Document.grade).where(
                    Document.query_id == q2.id, Document.external_id.in_(["12", "746"])
                )
            ).all()
        )
        assert best == {"12": 4, "746": 4}
        doc12 = s.scalar(
            select(Document.text).where(Document.collection_id == cid, Document.external_id == "12")
        )
        assert doc12 is not None and doc12.startswith("some structural and aerelastic")
        assert "\r" not in doc12
    # Importing the same files again changes nothing (idempotent).
    again = _import_cranfield(api, cid, cran)
    assert again.documents_created == 0 and again.documents_unchanged == 1837


def test_cranfield_all_documents(api: Api, shared_data: Path, tmp_path: Path) -> None:
    """Every one of the 1,400 documents, under the first two queries (pairing 'all')."""
    cran = shared_data / "cranfield"
    lines = (cran / "cran.qry").read_bytes().splitlines(keepends=True)
    third = [i for i, ln in enumerate(lines) if ln.startswith(b".I ")][2]
    two = tmp_path / "two.qry"
    two.write_bytes(b"".join(lines[:third]))
    cid = _new(api, "cranfield-all")
    report = _import_cranfield(
        api, cid, cran, queries=two, pairing="all", unjudged_grade=0, ignore_unknown_qrels=True
    )
    assert report.rows == 2800
    with api.db.read() as s:
        distinct = s.scalar(
            select(func.count(func.distinct(Document.external_id))).where(
                Document.collection_id == cid
            )
        )
        assert distinct == 1400
        positives = s.scalar(
            select(func.count()).where(Document.collection_id == cid, Document.grade > 0)
        )
    # Qrels lines 1..? belong to queries 1 and 2; their positive codes become grades > 0.
    assert positives == 29 + 25 - 2  # judged docs of queries 1 and 2, minus their -1 entries


def test_mq2008_features_join(api: Api, shared_data: Path) -> None:
    from ranking.io.letor import read_letor

    path = shared_data / "letor4-mq2008" / "S1.txt"
    data = read_letor(path)
    first = data.offsets[3]  # the first three queries
    rows = [
        {
            "query_id": str(data.qids[i]),
            "query": f"mq {data.qids[i]}",
            "doc_id": str(data.docids[i]),
            "text": "",
        }
        for i in range(first)
    ]
    cid = _new(api, "mq2008")
    collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(rows))
    report = attach_features(
        db=api.db, collection_id=cid, features=UploadedFile("S1.txt", path), max_bytes=0
    )
    assert report.matched == first and report.unmatched == 2933 - first
    assert report.documents_without == 0
    with api.db.read() as s:
        stored = {
            (q, d): f
            for q, d, f in s.execute(
                select(Query.external_id, Document.external_id, Document.features)
                .join(Query, Query.id == Document.query_id)
                .where(Document.collection_id == cid)
            )
        }
    for i in range(first):
        assert stored[(str(data.qids[i]), str(data.docids[i]))] == data.features[i].tolist()
    # Strict mode turns the unmatched rows into errors, and stores nothing new.
    with pytest.raises(Invalid) as info:
        attach_features(
            db=api.db,
            collection_id=cid,
            features=UploadedFile("S1.txt", path),
            strict=True,
            max_bytes=0,
        )
    assert info.value.detail[0]["file"] == "S1.txt"
    assert info.value.detail[0]["line"] == first + 1


TOPICS = b"""<top>
<num> Number: 1
<title> heap sort
<desc> Description:
How does heapsort find the top k?
</top>
<top>
<num> Number: 2
<title> pairwise judging
</top>
"""
DOCS_JSONL = b"""{"doc_id": "a", "title": "A", "text": "heaps"}
{"doc_id": "b", "title": "B", "text": "sorting"}
{"doc_id": "c", "title": "C", "html": "<p>pairs</p>"}
"""
QRELS = b"1 0 a 2\n1 0 b 0\n2 0 c 3\n2 0 a 1\n"


def _multipart(**files: bytes) -> dict:
    return {"files": {k: (f"{k}.txt", v, "text/plain") for k, v in files.items()}}


def test_trec_upload_over_http(api: Api) -> None:
    cid = _new(api, "trec-http")
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/import-files?kind=trec",
        **_multipart(topics=TOPICS, documents=DOCS_JSONL, qrels=QRELS),
    )
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == 4
    assert _counts(api, cid) == (2, 4)
    queries = collections.list_queries(db=api.db, collection_id=cid, viewer=None)
    assert queries[0].description == "How does heapsort find the top k?"
    # Grades attached later from another qrels file (HTTP, multipart part "qrels").
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/attach-grades",
        **_multipart(qrels=b"1 0 a 4\n2 0 c 1\n9 0 zz 1\n"),
    )
    assert r.status_code == 200, r.text
    assert (r.json()["matched"], r.json()["unmatched"]) == (2, 1)


@pytest.mark.parametrize(
    ("part", "content", "line", "needle"),
    [
        ("topics", TOPICS.replace(b"</top>\n<top>", b"<top>", 1), 6, "missing </top>"),
        ("documents", DOCS_JSONL.replace(b'"b", "title"', b'"b" "title"'), 2, "not valid JSON"),
        (
            "documents",
            b"<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n</DOC>\n<DOC>\n<TEXT>y</TEXT>\n</DOC>\n",
            5,
            "DOCNO",
        ),
        ("qrels", QRELS.replace(b"2 0 c 3", b"2 0 c three"), 3, "not a number"),
        ("qrels", QRELS + b"3 0 a 1\n", 5, "unknown query 3"),
    ],
)
def test_corrupted_upload_is_rejected_with_line(
    api: Api, part: str, content: bytes, line: int, needle: str
) -> None:
    cid = _new(api, f"broken-{part}-{line}-{needle[:6]}")
    files = {"topics": TOPICS, "documents": DOCS_JSONL, "qrels": QRELS, part: content}
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/import-files?kind=trec",
        **_multipart(**files),
    )
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(
        d["file"] == f"{part}.txt" and d["line"] == line and needle in d["msg"] for d in detail
    ), detail
    assert _counts(api, cid) == (0, 0)


def test_smart_and_letor_corruption_store_nothing(
    api: Api, shared_data: Path, tmp_path: Path
) -> None:
    cran = shared_data / "cranfield"
    docs = (cran / "cran.all.1400").read_bytes().replace(b".I 700\r\n", b".I 7OO\r\n")
    line = docs[: docs.index(b".I 7OO")].count(b"\n") + 1
    cid = _new(api, "smart-broken")
    with pytest.raises(Invalid) as info:
        _import_cranfield(api, cid, cran, documents=docs)
    assert [(d["file"], d["line"]) for d in info.value.detail] == [("cran.all.1400", line)]
    assert _counts(api, cid) == (0, 0)

    text = (shared_data / "letor4-mq2008" / "S1.txt").read_text().splitlines(keepends=True)
    text[40] = text[40].replace("qid:", "qid ", 1)
    bad = tmp_path / "S1-bad.txt"
    bad.write_text("".join(text[:60]))
    cid2 = _new(api, "letor-broken")
    with pytest.raises(Invalid) as info:
        import_files(
            db=api.db,
            collection_id=cid2,
            kind="letor",
            files={"features": UploadedFile("S1-bad.txt", bad)},
            max_bytes=0,
        )
    assert [(d["file"], d["line"]) for d in info.value.detail] == [("S1-bad.txt", 41)]
    assert _counts(api, cid2) == (0, 0)
    # The intact prefix imports as a LETOR-only collection with grades from the labels.
    good = tmp_path / "S1-head.txt"
    good.write_text(
        "".join(
            (shared_data / "letor4-mq2008" / "S1.txt").read_text().splitlines(keepends=True)[:60]
        )
    )
    report = import_files(
        db=api.db,
        collection_id=cid2,
        kind="letor",
        files={"features": UploadedFile("S1-head.txt", good)},
        max_bytes=0,
    )
    assert report.rows == 60


def test_cranfield_qrels_attach_and_size_limit(api: Api, shared_data: Path) -> None:
    cran = shared_data / "cranfield"
    cid = _new(api, "attach-cran")
    rows = [{"query_id": "2", "query": "q2", "doc_id": d, "text": ""} for d in ("12", "746", "1")]
    collections.import_ndjson(db=api.db, collection_id=cid, data=ndjson(rows))
    report = attach_grades(
        db=api.db,
        collection_id=cid,
        qrels=UploadedFile("cranqrel", cran / "cranqrel"),
        qrels_format="cranfield",
        max_bytes=0,
    )
    assert report.matched == 2 and report.documents_without == 1
    with api.db.read() as s:
        grades = dict(
            s.execute(
                select(Document.external_id, Document.grade).where(Document.collection_id == cid)
            ).all()
        )
    assert grades == {"12": 4, "746": 4, "1": None}
    # The app's body limit applies per uploaded file (and to the whole request, as 413).
    with pytest.raises(PayloadTooLarge):
        attach_grades(
            db=api.db,
            collection_id=cid,
            qrels=UploadedFile("big", cran / "cran.all.1400"),  # 1.7 MB > the test's 64 KiB
            qrels_format="cranfield",
        )
    big = b"1 0 a 1\n" * 10_000
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/attach-grades",
        **_multipart(qrels=big),
    )
    assert r.status_code == 413
    assert Counter(grades.values())[4] == 2


def test_run_pooling_import(api: Api) -> None:
    cid = _new(api, "run-pool")
    run = b"1 Q0 c 1 0.5 sys\n1 Q0 a 2 0.9 sys\n1 Q0 zz 3 0.8 sys\n2 Q0 b 1 0.1 sys\n"
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/import-files?kind=trec&pairing=run&run_depth=1",
        **_multipart(topics=TOPICS, documents=DOCS_JSONL, run=run),
    )
    assert r.status_code == 200, r.text
    # Query 1: the run's best known document by score (a, 0.9; zz is not in the collection).
    assert collections.documents_by_query(db=api.db, collection_id=cid) == {"1": 1, "2": 1}
    with api.db.read() as s:
        docs = set(s.scalars(select(Document.external_id).where(Document.collection_id == cid)))
    assert docs == {"a", "b"}


def test_attached_grades_keep_reimports_idempotent(api: Api) -> None:
    """attach_grades recomputes ``content_hash`` with the public
    ``app.collections.ndjson.document_content_hash``: the stored hash equals a hand-computed
    one, and a re-import of the document carrying the attached grade is a no-op."""
    import hashlib
    import json

    cid = _new(api, "hash-attach")
    row = {"query_id": "h1", "query": "hash", "doc_id": "hd1", "title": "T", "text": "é"}
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson([row]))
    assert r.status_code == 200, r.text
    report = attach_grades(
        db=api.db, collection_id=cid, qrels=UploadedFile("qrels", b"h1 0 hd1 3\n")
    )
    assert report.matched == 1
    blob = json.dumps(["T", "é", None, None, 3], ensure_ascii=False, separators=(",", ":"))
    expected = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    assert document_content_hash(title="T", text="é", html=None, features=None, grade=3) == expected
    with api.db.read() as s:
        doc = s.scalar(select(Document).where(Document.collection_id == cid))
        assert doc is not None and doc.grade == 3 and doc.content_hash == expected
    again = api.post(
        "admin", f"/api/v1/collections/{cid}/import", content=ndjson([dict(row, grade=3)])
    )
    assert again.status_code == 200, again.text
    assert again.json()["documents_unchanged"] == 1 and again.json()["documents_created"] == 0
