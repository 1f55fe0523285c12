"""LETOR feature files as a source of feature vectors (joined to documents by query and docid).

The file is read with :func:`ranking.io.letor.read_letor` (one parser for the whole project); this
module only turns its result into :class:`FeatureRow` records and its format errors into
:class:`~labeling.sources.base.SourceError` with the file name and line. MQ2008 names documents
in the trailing comment (``#docid = GX000-00-0000000 inc = 1 prob = 0.02``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from labeling.identifiers import identifier_problem, normal_identifier
from labeling.sources.base import FeatureRow, IssueCollector, SourceError

if TYPE_CHECKING:  # numpy is imported on use, as the reader is
    import numpy as np
    from numpy.typing import NDArray


class FeatureRows(Sequence[FeatureRow]):
    """The rows of a LETOR file as :class:`FeatureRow` values made on access: the file's
    features stay one float64 matrix (8 bytes a value, not a tuple of Python floats a row),
    so an import of a large file holds the matrix and the row being imported."""

    def __init__(
        self,
        qids: list[str],
        docids: list[str],
        features: NDArray[np.float64],
        labels: NDArray[np.float64],
        lines: list[int],
    ) -> None:
        self._qids, self._docids, self._lines = qids, docids, lines
        self._features, self._labels = features, labels

    def __len__(self) -> int:
        return len(self._qids)

    @overload
    def __getitem__(self, i: int) -> FeatureRow: ...

    @overload
    def __getitem__(self, i: slice) -> list[FeatureRow]: ...

    def __getitem__(self, i: int | slice) -> FeatureRow | list[FeatureRow]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return FeatureRow(
            self._qids[i],
            self._docids[i],
            tuple(self._features[i].tolist()),
            float(self._labels[i]),
            self._lines[i],
        )


def read_letor_features(
    path: str | Path, *, file: str | None = None, n_features: int | None = None
) -> FeatureRows:
    """Feature rows of a LETOR/SVMlight file, in file order.

    A file without ``docid = ...`` comments gets the reader's fallback names
    (``<qid>:<row in query>``), which will not match imported documents; a (query, docid) pair
    listed twice is an error naming the line.
    """
    import numpy as np

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
    keep: list[int] = []
    qids: list[str] = []
    docids: list[str] = []
    seen: dict[tuple[str, str], int] = {}
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
        keep.append(i)
        qids.append(qid)
        docids.append(doc)
    issues.raise_if_any()
    del seen
    rows = np.asarray(keep, dtype=np.intp)
    all_kept = rows.shape[0] == data.n_rows
    features = data.features if all_kept else data.features[rows]
    labels = data.labels if all_kept else data.labels[rows]
    lines = [linenos[i] if i < len(linenos) else 0 for i in keep]
    return FeatureRows(qids, docids, features, labels, lines)


def _data_line_numbers(path: Path) -> list[int]:
    out: list[int] = []
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            text = raw.strip()
            if text and not text.startswith(b"#"):
                out.append(number)
    return out
