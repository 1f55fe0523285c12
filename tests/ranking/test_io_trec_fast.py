"""The columnar TREC readers and evaluate_columns against the exact dict path.

Every file here is read twice: by ranking.io.trec (the exact Python readers) + evaluate, and by
ranking.io.trec_fast + evaluate_columns. Per-query values, query lists and error messages
must be identical, and the tests check which path (fast CSV reader or exact fallback) read
each variant, so that both are exercised.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ranking.evaluate import evaluate, evaluate_columns
from ranking.io import trec_fast
from ranking.io.trec import (
    TrecFormatError,
    parse_grade_map,
    read_qrels,
    read_qrels_detailed,
    read_run,
)
from ranking.io.trec_fast import JoinIndex, TrecColumns, read_qrels_columns, read_run_columns

# every test here runs on the compiled scan and join and on the numpy/pyarrow ones (conftest)
pytestmark = pytest.mark.usefixtures("trec_path")

PRESETS = ["paper", "trec_eval", "gdeval", "lightgbm", "letor4", "ranx"]
METRICS = ["ndcg@10", "ndcg", "dcg@3", "err", "map", "mrr", "p@5"]


def _awkward_lines(seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Run and qrels rows with ties, ids of 1..40 characters, interleaved queries, queries
    only in the run or only in the qrels, negative and float-written grades."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abcXYZ0123456789-_.:/"))
    run_rows: list[list[str]] = []
    qrels_rows: list[list[str]] = []
    for q in range(30):
        qid = f"q{q}" if q % 7 else f"Q-{q:05d}-long-query-id"
        n = int(rng.integers(1, 25))
        docs: list[str] = []
        while len(docs) < n:
            d = "".join(rng.choice(alphabet, size=int(rng.integers(1, 41))))
            if d not in docs:
                docs.append(d)
        # few distinct scores: many ties, some equal only in single precision
        base = rng.choice([0.5, 1.0, 2.25, 1e-3, 7.0], size=n)
        scores = [repr(float(s)) for s in base]
        if n > 2:
            scores[1] = "0.30000001"
            scores[2] = "0.3"  # equal to 0.30000001 in float32
        if q % 10 != 3:  # q3, q13, q23: only in the qrels
            for d, s in zip(docs, scores, strict=True):
                run_rows.append([qid, "Q0", d, "1", s, "tag"])
        if q % 10 != 5:  # q5, q15, q25: only in the run
            judged = [d for d in docs if rng.random() < 0.6] + [f"unretrieved{q}"]
            for d in judged:
                grade = rng.choice(["0", "1", "2", "3", "-1", "2.0"])
                qrels_rows.append([qid, "0", d, str(grade)])
    # interleave: queries are not contiguous in either file
    run_order = rng.permutation(len(run_rows))
    qrels_order = rng.permutation(len(qrels_rows))
    return [run_rows[i] for i in run_order], [qrels_rows[i] for i in qrels_order]


def _write(path: Path, rows: list[list[str]], sep: str = " ", end: str = "\n") -> Path:
    path.write_text("".join(sep.join(r) + end for r in rows), encoding="utf-8")
    return path


def _same_report(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.queries == b.queries
    assert a.unknown_queries == b.unknown_queries
    assert a.missing_queries == b.missing_queries
    assert a.counted == b.counted
    for name in a.metrics:
        for q in a.queries:
            x, y = a.per_query[name][q], b.per_query[name][q]
            assert (math.isnan(x) and math.isnan(y)) or x == y, (name, q, x, y)


def _both(run_path: Path, qrels_path: Path, **kw):  # type: ignore[no-untyped-def]
    exact = evaluate(read_run(run_path), qrels=read_qrels(qrels_path), **kw)
    run_cols, qrels_cols = read_run_columns(run_path), read_qrels_columns(qrels_path)
    return exact, evaluate_columns(run_cols, qrels_cols, **kw), run_cols, qrels_cols


VARIANTS = {
    # name: (separator, line end, extra transformation, read by the fast path)
    "spaces": (" ", "\n", None, True),
    "tabs": ("\t", "\n", None, True),
    "crlf": (" ", "\r\n", None, True),
    "double-spaces": ("  ", "\n", None, False),
    "trailing-space": (" ", " \n", None, True),
    "trailing-space-crlf": (" ", " \r\n", None, True),
    "trailing-space-some-lines": (" ", "\n", "trailing-some", False),
    "mixed-tab-space": (" ", "\n", "tab-first-field", False),
    "comment-lines": (" ", "\n", "comment", False),
    "non-ascii-id": (" ", "\n", "non-ascii", False),
}


def _variant_files(tmp_path: Path, name: str, seed: int = 1) -> tuple[Path, Path]:
    sep, end, extra, _ = VARIANTS[name]
    run_rows, qrels_rows = _awkward_lines(seed)
    if extra == "non-ascii":
        run_rows[0][2] = "dok-é"
        qrels_rows.append([run_rows[0][0], "0", "dok-é", "2"])
        run_rows[1][2] = "dok-z"  # 'z' < 'é' in bytes: order matters for ties=docid
    run_path = _write(tmp_path / "run.txt", run_rows, sep, end)
    qrels_path = _write(tmp_path / "qrels.txt", qrels_rows, sep, end)
    if extra == "tab-first-field":
        text = run_path.read_text().splitlines(keepends=True)
        text[3] = text[3].replace(" ", "\t", 1)
        run_path.write_text("".join(text))
    if extra == "trailing-some":
        text = run_path.read_text().splitlines(keepends=True)
        text[0] = text[0].replace("\n", " \n")  # the first line ends with a space, not all do
        run_path.write_text("".join(text))
    if extra == "comment":
        run_path.write_text("# a comment line\n" + run_path.read_text())
        qrels_path.write_text(qrels_path.read_text() + "# trailing comment\n")
    return run_path, qrels_path


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_columns_hold_what_the_exact_readers_read(tmp_path: Path, variant: str) -> None:
    run_path, qrels_path = _variant_files(tmp_path, variant)
    fast = VARIANTS[variant][3]
    run_cols = read_run_columns(run_path)
    qrels_cols = read_qrels_columns(qrels_path)
    # the mixed separators and the partly trailing spaces are in the run only
    run_only = variant in ("mixed-tab-space", "trailing-space-some-lines")
    assert run_cols.fast is fast and qrels_cols.fast is (fast or run_only)
    assert run_cols.to_mapping() == read_run(run_path)
    assert qrels_cols.to_mapping() == read_qrels(qrels_path)
    assert qrels_cols.layout == read_qrels_detailed(qrels_path)[1]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_small_blocks_screen_and_read_alike(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # blocks of 256 bytes (longer than any line): many pairs of bytes the screen checks fall
    # across a block boundary, and the last block is a short one
    monkeypatch.setattr(trec_fast, "BLOCK_SIZE", 256)
    test_columns_hold_what_the_exact_readers_read(tmp_path, variant)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("preset", PRESETS)
def test_evaluate_columns_equals_evaluate(tmp_path: Path, variant: str, preset: str) -> None:
    run_path, qrels_path = _variant_files(tmp_path, variant)
    for missing in ("ignore", "zero"):
        exact, columns, *_ = _both(
            run_path, qrels_path, metrics=METRICS, conventions=preset, missing=missing
        )
        _same_report(exact, columns)
    assert exact.unknown_queries and exact.missing_queries  # the files have both kinds


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("precision", ["single", "double"])
def test_docid_ties_and_score_precision(tmp_path: Path, seed: int, precision: str) -> None:
    run_path, qrels_path = _variant_files(tmp_path, "spaces", seed)
    from ranking.metrics import preset

    conv = preset("trec_eval").replace(score_precision=precision)
    exact, columns, run_cols, qrels_cols = _both(
        run_path, qrels_path, metrics=METRICS, conventions=conv
    )
    assert run_cols.fast
    _same_report(exact, columns)
    # a second evaluation rebuilds the released join indexes
    _same_report(exact, evaluate_columns(run_cols, qrels_cols, metrics=METRICS, conventions=conv))
    # the tie rule matters on these files: stable ties give other values
    stable = evaluate(
        read_run(run_path),
        qrels=read_qrels(qrels_path),
        metrics=METRICS,
        conventions=conv.replace(ties="stable"),
    )
    assert stable.per_query != exact.per_query


def test_key_collisions_fall_back_to_a_join_on_the_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_path, qrels_path = _variant_files(tmp_path, "spaces")
    exact = evaluate(read_run(run_path), qrels=read_qrels(qrels_path), metrics=METRICS)

    # every pair gets the same key: the fast readers refuse (a repeated key) and the exact
    # readers' columns say the keys are not unique, so the join matches strings
    def one_key(query, doc_hashes, n_queries):  # type: ignore[no-untyped-def]
        return np.zeros(query.shape[0], dtype=np.uint64)

    monkeypatch.setattr(trec_fast, "pair_keys", one_key)
    run_cols, qrels_cols = read_run_columns(run_path), read_qrels_columns(qrels_path)
    assert not run_cols.fast and not run_cols.distinct_pairs()
    assert not qrels_cols.join_index().unique
    _same_report(exact, evaluate_columns(run_cols, qrels_cols, metrics=METRICS))


def test_a_false_key_match_is_caught_by_the_string_check(tmp_path: Path) -> None:
    # Keys that match across files for different documents (a cross-file collision): the
    # string check refuses the match and the string join gives the exact labels.
    run = {"q": {"a": 1.0, "b": 0.5}}
    qrels = {"q": {"c": 2, "a": 1}}
    run_cols = TrecColumns.from_mapping(run)
    qrels_cols = TrecColumns.from_mapping(qrels)
    # the index of the judged "c" and "a" built from the hashes of "b" and "a": "c" now seems
    # to match the run's "b"
    forged_index = JoinIndex.of(qrels_cols.query, trec_fast.string_hashes(["b", "a"]), 1)
    assert forged_index.unique
    forged = TrecColumns(
        qids=qrels_cols.qids,
        query=qrels_cols.query,
        docids=qrels_cols.docids,
        values=qrels_cols.values,
        _join=[forged_index],
    )
    report = evaluate_columns(run_cols, forged, metrics=["ndcg"], conventions="ranx")
    _same_report(evaluate(run, qrels=qrels, metrics=["ndcg"], conventions="ranx"), report)


@pytest.mark.parametrize(
    "token", ["1_0", "inf", "-Infinity", "1e400", "1e-400", "+.5", "5.", "0x1A", "NA", "nan"]
)
def test_odd_score_tokens_read_as_float_does(tmp_path: Path, token: str) -> None:
    path = _write(
        tmp_path / "run.txt", [["q", "Q0", "a", "1", token, "t"], ["q", "Q0", "b", "2", "0.5", "t"]]
    )
    try:
        expected = read_run(path)
    except TrecFormatError as exc:
        with pytest.raises(TrecFormatError) as got:
            read_run_columns(path)
        assert str(got.value) == str(exc)
    else:
        assert read_run_columns(path).to_mapping() == expected


RUN_OK = [["q1", "Q0", "a", "1", "2.0", "t"], ["q1", "Q0", "b", "2", "1.0", "t"]]
QRELS_OK = [["q1", "0", "a", "1"], ["q1", "0", "b", "0"]]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([*RUN_OK, ["q1", "Q0", "a", "3", "0.5", "t"]], ":3: document a listed twice"),
        ([*RUN_OK, ["q2", "Q0", "a", "3", "nan", "t"]], ":3: score is NaN"),
        ([*RUN_OK, ["q2", "Q0", "a", "3", "x", "t"]], ":3: score 'x' is not a number"),
        ([*RUN_OK, ["q2", "Q0", "a", "3", "1.0"]], ":3: expected 6 fields"),
    ],
)
def test_run_errors_name_file_and_line(tmp_path: Path, rows: list, message: str) -> None:
    path = _write(tmp_path / "run.txt", rows)
    with pytest.raises(TrecFormatError) as exact:
        read_run(path)
    with pytest.raises(TrecFormatError) as columns:
        read_run_columns(path)
    assert str(columns.value) == str(exact.value)
    assert str(path) + message in str(columns.value)


@pytest.mark.parametrize(
    ("rows", "grade_map", "message"),
    [
        ([*QRELS_OK, ["q1", "0", "a", "2"]], None, ":3: document a of query q1 already judged"),
        ([*QRELS_OK, ["q2", "0", "a", "0.5"]], None, ":3: relevance '0.5' is not a whole"),
        ([*QRELS_OK, ["q2", "0", "a", "inf"]], None, ":3: relevance 'inf' is not a finite"),
        (
            [["1", "0", "a", "1"], ["1", "0", "b", "5"], ["2", "0", "a", "7"]],
            "cranfield",
            ":3: relevance 7 is not in the grade",
        ),
        ([*QRELS_OK, ["q2", "0", "a"]], None, ":3: expected 4 fields"),
        ([["1", "10", "0", "0.000000"], ["1", "11", "0", "1.0"]] * 1, "smart", ":2: columns 3"),
    ],
)
def test_qrels_errors_name_file_and_line(
    tmp_path: Path, rows: list, grade_map: str | None, message: str
) -> None:
    path = _write(tmp_path / "qrels.txt", rows)
    layout = "smart-rel" if grade_map == "smart" else "auto"
    mapping = parse_grade_map(grade_map) if grade_map and grade_map != "smart" else None
    with pytest.raises(TrecFormatError) as exact:
        read_qrels_detailed(path, layout=layout, grade_map=mapping)
    with pytest.raises(TrecFormatError) as columns:
        read_qrels_columns(path, layout=layout, grade_map=mapping)
    assert str(columns.value) == str(exact.value)
    assert str(path) + message in str(columns.value)


@pytest.mark.parametrize(
    ("rows", "layout", "grade_map"),
    [
        ([["1", "184", "2"], ["1", "29", "-1"], ["2", "12", "5"]], "auto", "cranfield"),
        ([["1", "10", "0", "0.000000"], ["1", "11", "0", "0"]], "auto", None),
        ([["1", "0", "a", "0.7"], ["1", "0", "b", "0.2"]], "trec", "threshold:0.5"),
    ],
)
def test_qrels_layouts_and_grade_maps_on_the_fast_path(
    tmp_path: Path, rows: list, layout: str, grade_map: str | None
) -> None:
    path = _write(tmp_path / "qrels.txt", rows)
    mapping = parse_grade_map(grade_map) if grade_map else None
    exact, chosen = read_qrels_detailed(path, layout=layout, grade_map=mapping)
    columns = read_qrels_columns(path, layout=layout, grade_map=mapping)
    assert columns.fast and columns.layout == chosen
    assert columns.to_mapping() == exact


def test_string_hashes_depend_on_every_byte_and_the_length() -> None:
    words = ["", "a", "a\x00", "ab", "ba", "abcdefgh", "abcdefgi", "abcdefghX", "é", "x" * 70]
    hashes = trec_fast.string_hashes(words)
    assert len(set(hashes.tolist())) == len(words)
    import pyarrow as pa

    chunked = pa.chunked_array([pa.array(words[:3]), pa.array(words[3:])])
    assert trec_fast.string_hashes(chunked).tolist() == hashes.tolist()


def test_an_empty_field_across_a_block_boundary_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "q2 Q0 dX  0.5 t" has six fields for the CSV reader (an empty rank) and five for
    # str.split(); its doubled space is the last byte of the first 256-byte block and the first
    # of the second, so only the pair across the boundary shows it
    monkeypatch.setattr(trec_fast, "BLOCK_SIZE", 256)
    head = "".join(f"q1 Q0 d{i} {i} 0.5 t\n" for i in range(12))
    bad = "q2 Q0 d"
    bad += "x" * (255 - len(head) - len(bad)) + "  0.5 t\n"
    path = tmp_path / "run.txt"
    path.write_text(head + bad + "q2 Q0 e 2 0.25 t\n")
    assert path.read_bytes()[255:257] == b"  "
    with pytest.raises(TrecFormatError) as exact:
        read_run(path)
    with pytest.raises(TrecFormatError) as columns:
        read_run_columns(path)
    assert str(columns.value) == str(exact.value)
