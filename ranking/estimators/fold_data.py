"""Folds of a learning-to-rank experiment (docs/ranking.md#protocol): the five LETOR folds read
from their files, folds assembled from named parts (LETOR's S1..S5, or a seeded k-fold split
by query), and each part's truth: the data's grades, or top-k truth sampled once per part
(graded -> seeded random total order -> top k, Niu et al. 2012 §6.3) so that every model of an
experiment sees the same truth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ranking.data.dataset import QueryDataset
from ranking.data.folds import Fold, letor4_folds, ohsumed_folds

__all__ = ["TRUTHS", "FoldData", "folds_from_parts", "kfold_parts", "load_folds", "part_truths"]

#: The kinds of truth an experiment measures against.
TRUTHS = ("graded", "topk")


@dataclass
class FoldData:
    """One fold: train / validation / test under one kind of truth."""

    name: str
    train: QueryDataset
    valid: QueryDataset
    test: QueryDataset
    train_topk: QueryDataset  # what the top-k models train on


def load_folds(
    directory: str | Path, truth: str = "graded", k: int = 10, seed: int = 0
) -> list[FoldData]:
    """Read the five parts once and build the five folds for ``truth`` ("graded"|"topk").

    ``directory`` holds ``S1.txt``..``S5.txt`` (LETOR 4.0) or ``Fold1_test.txt``..
    ``Fold5_test.txt`` (LETOR 3.0 OHSUMED). Top-k truth is sampled once per part with a seed
    derived from ``seed``, so every model sees the same truth.
    """
    if truth not in TRUTHS:
        raise ValueError(f"truth must be 'graded' or 'topk', got {truth!r}")
    d = Path(directory)
    if (d / "S1.txt").is_file():
        folds = letor4_folds()
    elif (d / "Fold1_test.txt").is_file():
        folds = ohsumed_folds()
    else:
        raise ValueError(
            f"{d}: expected S1.txt..S5.txt (LETOR 4.0) or Fold1_test.txt.. (LETOR 3.0 OHSUMED)"
        )
    names = sorted({n for f in folds for n in (*f.train, *f.vali, *f.test)})
    parts = {n: QueryDataset.read(d / f"{n}.txt") for n in names}
    return folds_from_parts(parts, folds, truth=truth, k=k, seed=seed)


def folds_from_parts(
    parts: Mapping[str, QueryDataset],
    folds: Sequence[Fold],
    *,
    truth: str,
    k: int = 10,
    seed: int = 0,
) -> list[FoldData]:
    """Assemble ``folds`` (part names per role) from the data sets ``parts``.

    Graded parts are converted to top-k truth once per part (graded -> seeded random total
    order -> top k, paper §6.3), with the seed ``seed * 1000 + i`` for the i-th part in name
    order, so every model sees the same truth. Parts that already hold top-k truth (``topk``
    set, e.g. a study's κ-labels) are used as they are; they need ``truth="topk"``.
    """
    if truth not in TRUTHS:
        raise ValueError(f"truth must be 'graded' or 'topk', got {truth!r}")
    source, topk = part_truths(parts, truth=truth, k=k, seed=seed)
    out = []
    for f in folds:
        out.append(
            FoldData(
                name=f.name,
                train=QueryDataset.concat([source[n] for n in f.train]),
                valid=QueryDataset.concat([source[n] for n in f.vali]),
                test=QueryDataset.concat([source[n] for n in f.test]),
                train_topk=QueryDataset.concat([topk[n] for n in f.train]),
            )
        )
    return out


def part_truths(
    parts: Mapping[str, QueryDataset], *, truth: str, k: int, seed: int
) -> tuple[dict[str, QueryDataset], dict[str, QueryDataset]]:
    """Per part: the truth measured (the parts as they are, or their top-k truth) and the
    top-k truth the top-k models train on (the seeds of :func:`folds_from_parts`)."""
    names = sorted(parts)
    if truth == "graded" and any(parts[n].topk is not None for n in names):
        raise ValueError("graded truth needs graded parts; these hold top-k truth")
    topk = {n: parts[n].to_topk(k, seed=seed * 1000 + i) for i, n in enumerate(names)}
    source = topk if truth == "topk" else dict(parts)
    return source, topk


def kfold_parts(data: QueryDataset, n_folds: int = 5, seed: int = 0) -> dict[str, QueryDataset]:
    """Split ``data`` by query into ``n_folds`` parts ``P1..Pn`` of near-equal query counts
    (a seeded permutation of the queries dealt out in turn); for :func:`folds_from_parts`
    with :func:`ranking.data.folds.rotation_folds`."""
    if n_folds < 3:
        raise ValueError(f"k-fold needs at least 3 folds (train, validation, test), got {n_folds}")
    if data.n_queries < n_folds:
        raise ValueError(f"{n_folds} folds need at least {n_folds} queries, got {data.n_queries}")
    order = np.random.default_rng(seed).permutation(data.n_queries)
    return {f"P{i + 1}": data.subset(np.sort(order[i::n_folds])) for i in range(n_folds)}
