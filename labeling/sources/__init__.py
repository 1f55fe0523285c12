"""Pure parsers for the collection formats an admin imports (no FastAPI, no SQLAlchemy).

Each parser reads lines (a stream is fine), reports every problem with file name and line
(:class:`SourceError`), and produces records that :func:`build_rows` turns into the service's
NDJSON import objects ``{"query_id", "query", "description"?, "doc_id", "title"?,
"text"? | "html"?, "features"?, "grade"?}``.

* TREC topics, ``<DOC>`` SGML documents and qrels: :mod:`labeling.sources.trec`
* JSON Lines documents: :mod:`labeling.sources.jsonl`
* SMART collections (Cranfield quirks included): :mod:`labeling.sources.smart`
* LETOR feature files (via :mod:`ranking.io.letor`): :mod:`labeling.sources.letor`
"""

from labeling.sources.base import (
    FeatureRow,
    ParseIssue,
    QrelsEntry,
    SourceDocument,
    SourceError,
    Topic,
    iter_byte_lines,
)
from labeling.sources.jsonl import parse_jsonl_docs
from labeling.sources.rows import (
    LETOR_PART_PREFIX,
    UnpooledJudgment,
    build_rows,
    join_features,
    join_grades,
    letor_part,
    rows_from_letor,
    unpooled_judgments,
)
from labeling.sources.smart import (
    cranfield_grade,
    load_cranfield,
    parse_cranfield_qrels,
    parse_smart_docs,
    parse_smart_queries,
)
from labeling.sources.trec import parse_qrels, parse_topics, parse_trec_docs, trec_grade

__all__ = [
    "LETOR_PART_PREFIX",
    "FeatureRow",
    "ParseIssue",
    "QrelsEntry",
    "SourceDocument",
    "SourceError",
    "Topic",
    "UnpooledJudgment",
    "build_rows",
    "cranfield_grade",
    "iter_byte_lines",
    "join_features",
    "join_grades",
    "letor_part",
    "load_cranfield",
    "parse_cranfield_qrels",
    "parse_jsonl_docs",
    "parse_qrels",
    "parse_smart_docs",
    "parse_smart_queries",
    "parse_topics",
    "parse_trec_docs",
    "rows_from_letor",
    "trec_grade",
    "unpooled_judgments",
]
