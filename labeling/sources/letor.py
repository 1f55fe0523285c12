"""LETOR feature files as a source of feature vectors (joined to documents by query and docid).

The file is read with :func:`ranking.io.letor.read_letor` (one parser for the whole project); this
module only turns its result into :class:`FeatureRow` records and its format errors into
:class:`~labeling.sources.base.SourceError` with the file name and line. MQ2008 names documents
in the trailing comment (``#docid = GX000-00-0000000 inc = 1 prob = 0.02``).
"""

from __future__ import annotations

from pathlib import Path

from labeling.identifiers import identifier_problem, normal_identifier
from labeling.sources.base import FeatureRow, IssueCollector, SourceError


def read_letor_features(
    path: str | Path, *, file: str | None = None, n_features: int | None = None
) -> list[FeatureRow]:
    """Feature rows of a LETOR/SVMlight file, in file order.

    A file without ``docid = ...`` comments gets the reader's fallback names
    (``<qid>:<row in query>``), which will not match imported documents; a (query, docid) pair
    listed twice is an error naming the line.
    """
    from ranking.io.letor import LetorFormatError, read_letor  # numpy-heavy; import on use

    name = file or Path(path).name
    try:
        data = read_letor(path, n_features=n_features)
    except LetorFormatError as exc:
        message = str(exc).split(": ", 1)[-1] if exc.line is not None else str(exc)
        raise SourceError.single(name, exc.line or 0, message) from None
    except ValueError as exc:  # other reader complaints (no qid etc.) without a line
        raise SourceError.single(name, 0, str(exc)) from None
    # Physical line numbers of the data rows (the reader skips blanks and comment lines).
    linenos = _data_line_numbers(Path(path))
    issues = IssueCollector(name)
    rows: list[FeatureRow] = []
    seen: dict[tuple[str, str], int] = {}
    feats = data.features.tolist()
    labels = data.labels.tolist()
    for i in range(data.n_rows):
        qid, doc = normal_identifier(str(data.qids[i])), normal_identifier(str(data.docids[i]))
        line = linenos[i] if i < len(linenos) else 0
        bad = [
            f"{what} {p}"
            for what, v in (("qid", qid), ("docid", doc))
            if (p := identifier_problem(v))
        ]
        if bad:
            issues.add(line, "; ".join(bad))
            continue
        if (qid, doc) in seen:
            issues.add(
                line, f"query {qid} document {doc} appears twice (first on line {seen[(qid, doc)]})"
            )
            continue
        seen[(qid, doc)] = line
        rows.append(FeatureRow(qid, doc, tuple(feats[i]), float(labels[i]), line))
    issues.raise_if_any()
    return rows


def _data_line_numbers(path: Path) -> list[int]:
    out: list[int] = []
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            text = raw.strip()
            if text and not text.startswith(b"#"):
                out.append(number)
    return out
