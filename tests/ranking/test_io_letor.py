"""LETOR/SVMlight reading and writing: real data counts (from the data READMEs), lossless
round trips, group files, folds and malformed-input errors with line numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ranking.io.letor as letor_module
from ranking.data.folds import letor4_folds, load_fold, ohsumed_folds
from ranking.io.letor import (
    LetorData,
    LetorFormatError,
    concat,
    read_group_file,
    read_letor,
    write_group_file,
    write_letor,
)

# shared/data/letor4-mq2008/README.md: rows, queries, labels 0/1/2, no-relevant queries, min-max
MQ2008 = {
    "S1": (2933, 157, (2316, 427, 190), 52, 6, 118),
    "S2": (3635, 157, (3080, 385, 170), 45, 5, 121),
    "S3": (3062, 157, (2424, 411, 227), 35, 5, 119),
    "S4": (2707, 157, (2140, 400, 167), 37, 6, 118),
    "S5": (2874, 156, (2319, 378, 177), 51, 6, 119),
}
# shared/data/letor3-ohsumed/README.md
OHSUMED = {
    "Fold1_test": (3383, 22, (2794, 274, 315), 0, 58, 295),
    "Fold2_test": (2570, 21, (1751, 451, 368), 1, 35, 235),
    "Fold3_test": (3076, 21, (2162, 501, 413), 0, 41, 320),
    "Fold4_test": (3573, 21, (2139, 813, 621), 0, 74, 288),
    "Fold5_test": (3538, 21, (2457, 546, 535), 0, 88, 289),
}


def _check_counts(data: LetorData, expected: tuple, n_features: int) -> None:
    rows, queries, labels, no_rel, lo, hi = expected
    assert data.n_rows == rows
    assert data.n_queries == queries
    assert data.n_features == n_features
    assert tuple(np.bincount(data.labels.astype(int), minlength=3)) == labels
    has_rel = np.maximum.reduceat(data.labels, data.offsets[:-1]) > 0
    assert int((~has_rel).sum()) == no_rel
    assert data.group_sizes.min() == lo and data.group_sizes.max() == hi
    assert np.unique(data.query_ids).size == queries


@pytest.fixture(scope="module")
def mq2008(shared_data: Path) -> dict[str, LetorData]:
    return {name: read_letor(shared_data / "letor4-mq2008" / f"{name}.txt") for name in MQ2008}


def test_mq2008_counts_match_readme(mq2008: dict[str, LetorData]) -> None:
    for name, expected in MQ2008.items():
        _check_counts(mq2008[name], expected, 46)
        assert not mq2008[name].sparse
    total = concat(list(mq2008.values()))
    assert total.n_rows == 15211 and total.n_queries == 784
    assert tuple(np.bincount(total.labels.astype(int))) == (12279, 2001, 931)
    # docids come from the comments; features in [0, 1] (QueryLevelNorm)
    assert mq2008["S1"].docids[0] == "GX008-86-4444840"
    assert mq2008["S1"].comments[0].startswith("docid = GX008-86-4444840 inc = 1 prob = ")
    assert total.features.min() >= 0.0 and total.features.max() <= 1.0


def test_mq2008_values_equal_float_of_text(shared_data: Path, mq2008: dict[str, LetorData]) -> None:
    lines = (shared_data / "letor4-mq2008" / "S4.txt").read_text().splitlines()
    for i in (0, 1, 777, len(lines) - 1):
        body = lines[i].partition("#")[0].split()
        assert mq2008["S4"].labels[i] == float(body[0])
        assert mq2008["S4"].qids[i] == body[1][4:]
        expected = [float(t.split(":")[1]) for t in body[2:]]
        assert mq2008["S4"].features[i].tolist() == expected


def test_mq2008_round_trip_is_lossless(mq2008: dict[str, LetorData], tmp_path: Path) -> None:
    src = mq2008["S5"]
    out = tmp_path / "S5.txt"
    write_letor(out, src)
    back = read_letor(out)
    assert np.array_equal(back.features, src.features)
    assert np.array_equal(back.labels, src.labels)
    assert (back.qids == src.qids).all() and (back.docids == src.docids).all()
    assert (back.comments == src.comments).all()
    assert np.array_equal(back.offsets, src.offsets)


def test_ohsumed_counts_and_folds(shared_data: Path, tmp_path: Path) -> None:
    d = shared_data / "letor3-ohsumed"
    parts = {name: read_letor(d / f"{name}.txt") for name in OHSUMED}
    for name, expected in OHSUMED.items():
        _check_counts(parts[name], expected, 45)
    total = concat(list(parts.values()))
    assert total.n_rows == 16140 and total.n_queries == 106
    train, vali, test = load_fold(d, 1, scheme="ohsumed")
    assert test.n_rows == 3383 and vali.n_rows == 3538
    assert train.n_rows == 2570 + 3076 + 3573
    write_letor(tmp_path / "f.txt", parts["Fold2_test"])
    back = read_letor(tmp_path / "f.txt")
    assert np.array_equal(back.features, parts["Fold2_test"].features)


def test_mq2008_fold1(shared_data: Path) -> None:
    train, vali, test = load_fold(shared_data / "letor4-mq2008", 1)
    assert train.n_rows == 9630  # "mq2008 train 9630 rows, test 2874 rows"
    assert test.n_rows == 2874 and vali.n_rows == 2707


def test_fold_rotation_tables() -> None:
    folds = letor4_folds()
    assert [(f.train, f.vali, f.test) for f in folds[:2]] == [
        (("S1", "S2", "S3"), ("S4",), ("S5",)),
        (("S2", "S3", "S4"), ("S5",), ("S1",)),
    ]
    assert folds[4].train == ("S5", "S1", "S2") and folds[4].test == ("S4",)
    oh = ohsumed_folds(["T1", "T2", "T3", "T4", "T5"])
    # the whole tables of the two data READMEs
    assert [("".join(f.train), *f.vali, *f.test) for f in folds] == [
        ("S1S2S3", "S4", "S5"),
        ("S2S3S4", "S5", "S1"),
        ("S3S4S5", "S1", "S2"),
        ("S4S5S1", "S2", "S3"),
        ("S5S1S2", "S3", "S4"),
    ]
    assert [("".join(f.train), *f.vali, *f.test) for f in oh] == [
        ("T2T3T4", "T5", "T1"),
        ("T3T4T5", "T1", "T2"),
        ("T4T5T1", "T2", "T3"),
        ("T5T1T2", "T3", "T4"),
        ("T1T2T3", "T4", "T5"),
    ]
    with pytest.raises(ValueError, match="exactly 5"):
        letor4_folds(["S1", "S2"])
    for f in [*folds, *oh]:  # every fold uses all five parts once
        assert len({*f.train, *f.vali, *f.test}) == 5


def test_lightgbm_example_with_group_file(shared_data: Path, tmp_path: Path) -> None:
    d = shared_data / "lightgbm-lambdarank-example"
    train = read_letor(d / "rank.train")  # finds rank.train.query
    assert train.n_rows == 3005 and train.n_queries == 201 and train.sparse
    test = read_letor(d / "rank.test", group_file=d / "rank.test.query")
    assert test.n_rows == 768 and test.n_queries == 50
    assert set(np.unique(train.labels)) <= {0, 1, 2, 3, 4}
    write_letor(tmp_path / "t.txt", test, group_file=tmp_path / "t.txt.query")
    back = read_letor(tmp_path / "t.txt")
    assert np.array_equal(back.features, test.features)
    assert np.array_equal(read_group_file(tmp_path / "t.txt.query"), test.group_sizes)


SPARSE = """\
2 qid:7 1:0.5 3:-1.25 # docid = a
0 qid:7 2:1e-3
1 qid:8 1:1 2:2 3:3 #docid = c extra
"""


def test_sparse_small_file(tmp_path: Path) -> None:
    p = tmp_path / "s.txt"
    p.write_text(SPARSE)
    data = read_letor(p)
    assert data.sparse and data.n_features == 3
    assert data.features.tolist() == [[0.5, 0, -1.25], [0, 0.001, 0], [1, 2, 3]]
    assert data.query_ids.tolist() == ["7", "8"]
    assert data.docids.tolist() == ["a", "7:1", "c"]
    write_letor(tmp_path / "o.txt", data)
    back = read_letor(tmp_path / "o.txt")
    assert np.array_equal(back.features, data.features)
    assert back.comments.tolist() == data.comments.tolist()
    assert read_letor(p, n_features=5).n_features == 5


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("1 qid:1 1:0.5\n1 qid:1 1:x\n", 2, "bad value"),
        ("1 qid:1 1:0.5\n\n1 qid:1 2:1:3\n", 3, "bad value"),
        ("1 qid:1 1:0.5\nx qid:1 1:1\n", 2, "label"),
        ("1 qid:1 1:0.5\n1 1:1\n", 2, "qid"),
        ("1 qid:1 1:0.5\n1 qid:1 0:1\n", 2, "fid"),
        ("1 qid:1 1:0.5\n1 qid:1 1:1 1:2\n", 2, "twice"),
        ("1 qid:1 1:0.5\n1 qid:2 1:1\n1 qid:1 1:1\n", 3, "grouped"),
        ("1 qid:1 1:0.5 2 3\n", 1, "fid"),
        ("1 qid:1 1:nan\n", 1, "bad value"),
    ],
)
def test_malformed_lines_report_file_and_line(
    tmp_path: Path, text: str, line: int, what: str
) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(LetorFormatError, match=what) as info:
        read_letor(p)
    assert info.value.line == line
    assert str(info.value).startswith(f"{p}:{line}: ")


@pytest.mark.parametrize("block", [1, 2, 3])
def test_blockwise_parse_equals_one_block(
    tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows parsed a few at a time (as a large file is) give what one block gives: widths
    that differ between blocks, sparse rows, comments, docids, and the errors' lines."""
    p = tmp_path / "s.txt"
    p.write_text(SPARSE + "2 qid:9 1:4 2:5\n0 qid:9 3:7 #docid = z\n")
    whole = read_letor(p)
    monkeypatch.setattr(letor_module, "BLOCK_ROWS", block)
    parts = read_letor(p)
    assert parts.features.tolist() == whole.features.tolist()
    assert parts.features.tolist()[-2:] == [[4, 5, 0], [0, 0, 7]]
    for name in ("labels", "qids", "offsets", "comments", "docids"):
        assert getattr(parts, name).tolist() == getattr(whole, name).tolist(), name
    assert parts.sparse == whole.sparse is True
    assert read_letor(p, n_features=5).features.shape == (5, 5)
    dense = tmp_path / "d.txt"
    dense.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:1 2:2\n0 qid:2 1:3 2:4\n")
    assert read_letor(dense).sparse is False
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n1 qid:1 1:1\n1 1:1\n")
    with pytest.raises(LetorFormatError, match="qid") as info:
        read_letor(bad)
    assert info.value.line == 3


def test_group_file_errors(tmp_path: Path) -> None:
    (tmp_path / "r.txt").write_text("1 1:1\n0 1:2\n")
    with pytest.raises(LetorFormatError, match="no group file"):
        read_letor(tmp_path / "r.txt")
    write_group_file(tmp_path / "r.txt.query", [3])
    with pytest.raises(LetorFormatError, match="add up"):
        read_letor(tmp_path / "r.txt")
    (tmp_path / "r.txt.query").write_text("2\nx\n")
    with pytest.raises(LetorFormatError, match=r"r\.txt\.query:2"):
        read_letor(tmp_path / "r.txt")
    (tmp_path / "r.txt.query").write_bytes(b"1\n\n\xff1\n")
    with pytest.raises(LetorFormatError, match=r"r\.txt\.query:3: not UTF-8"):
        read_letor(tmp_path / "r.txt")


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    p = tmp_path / "w.txt"
    p.write_bytes(b"\xef\xbb\xbf1 qid:1 1:0.5 #docid = a\r\n0 qid:1 1:0.25 #docid = b\r\n")
    data = read_letor(p)
    assert data.labels.tolist() == [1.0, 0.0] and data.docids.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="scheme"):
        load_fold(tmp_path, 1, scheme="mslr")  # type: ignore[arg-type]


def test_only_newline_ends_a_row(tmp_path: Path) -> None:
    # Form feed, U+001C and U+2028 are line breaks for str.splitlines but not in a LETOR
    # file: a comment holding one is still one row, and later line numbers stay right.
    p = tmp_path / "c.txt"
    p.write_text(
        "1 qid:1 1:0.5 #docid = a\x0cnote\n0 qid:1 1:0.25 #docid = b\u2028x\x1cy\n1 qid:1 1:q\n",
        encoding="utf-8",
    )
    with pytest.raises(LetorFormatError, match="bad value") as info:
        read_letor(p)
    assert info.value.line == 3
    p.write_text(
        "1 qid:1 1:0.5 #docid = a\x0cnote\n0 qid:1 1:0.25 #docid = b\u2028x\x1cy\n",
        encoding="utf-8",
    )
    data = read_letor(p)
    assert data.n_rows == 2 and data.docids.tolist() == ["a", "b"]  # the id ends at a space
    assert data.comments.tolist() == ["docid = a\x0cnote", "docid = b\u2028x\x1cy"]


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "b.txt"
    p.write_bytes(b"1 qid:1 1:0.5\n1 qid:1 1:\xff\n")
    with pytest.raises(LetorFormatError, match="UTF-8") as info:
        read_letor(p)
    assert info.value.line == 2
