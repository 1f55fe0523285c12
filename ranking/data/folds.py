"""Five-fold cross-validation splits of the LETOR benchmarks.

LETOR 4.0 (MQ2007/MQ2008) ships five partitions S1..S5 and builds fold i (1-based) by
rotation: train = S_i, S_{i+1}, S_{i+2}; validation = S_{i+3}; test = S_{i+4} (indices mod 5).
So Fold1 = train S1-S3, vali S4, test S5 (Qin & Liu 2013, arXiv:1306.2597; shared data README).

LETOR 3.0 OHSUMED ships the five folds' test sets (disjoint). Its README's scheme is the same
rotation named after the test set: Fold k = test T_k, vali T_{k-1}, train T_{k+1}, T_{k+2},
T_{k+3} (Fold1: test T1, vali T5, train T2-T4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ranking.io.letor import LetorData, concat, read_letor

__all__ = ["Fold", "letor4_folds", "load_fold", "ohsumed_folds", "rotation_folds"]

Scheme = Literal["letor4", "ohsumed"]


@dataclass(frozen=True)
class Fold:
    """Names of the parts that form one fold's train / validation / test sets."""

    name: str
    train: tuple[str, ...]
    vali: tuple[str, ...]
    test: tuple[str, ...]


def _rotation(parts: Sequence[str], what: str, train: int, vali: int, test: int) -> list[Fold]:
    """Five folds; fold i (0-based) takes part (i + offset) mod 5 for each role, with the
    three training parts consecutive from ``train``."""
    if len(parts) != 5:
        raise ValueError(f"{what} need exactly 5 partitions, got {len(parts)}")
    p = list(parts)
    return [
        Fold(
            name=f"Fold{i + 1}",
            train=tuple(p[(i + train + j) % 5] for j in range(3)),
            vali=(p[(i + vali) % 5],),
            test=(p[(i + test) % 5],),
        )
        for i in range(5)
    ]


def rotation_folds(parts: Sequence[str]) -> list[Fold]:
    """The LETOR 4.0 rotation generalised to n >= 3 parts: fold i trains on the n - 2 parts
    from part i on, validates on part i + n - 2 and tests on part i + n - 1 (indices mod n).
    Five parts give exactly :func:`letor4_folds`; every part is tested once."""
    n = len(parts)
    if n < 3:
        raise ValueError(f"a rotation needs at least 3 parts (train, validation, test), got {n}")
    p = list(parts)
    return [
        Fold(
            name=f"Fold{i + 1}",
            train=tuple(p[(i + j) % n] for j in range(n - 2)),
            vali=(p[(i + n - 2) % n],),
            test=(p[(i + n - 1) % n],),
        )
        for i in range(n)
    ]


def letor4_folds(parts: Sequence[str] = ("S1", "S2", "S3", "S4", "S5")) -> list[Fold]:
    """LETOR 4.0 rotation over five partitions (Fold1 = train S1-S3, vali S4, test S5)."""
    return _rotation(parts, "LETOR folds", train=0, vali=3, test=4)


def ohsumed_folds(
    parts: Sequence[str] = ("Fold1_test", "Fold2_test", "Fold3_test", "Fold4_test", "Fold5_test"),
) -> list[Fold]:
    """LETOR 3.0 OHSUMED scheme over the five test sets (Fold1 = test T1, vali T5, train T2-T4)."""
    return _rotation(parts, "OHSUMED folds", train=1, vali=-1, test=0)


def load_fold(
    directory: str | Path, fold: int, *, scheme: Scheme = "letor4"
) -> tuple[LetorData, LetorData, LetorData]:
    """Read fold ``fold`` (1..5) from ``directory`` holding ``S1.txt``..``S5.txt`` (letor4)
    or ``Fold1_test.txt``..``Fold5_test.txt`` (ohsumed). Returns (train, vali, test)."""
    if not 1 <= fold <= 5:
        raise ValueError(f"fold must be 1..5, got {fold}")
    if scheme not in ("letor4", "ohsumed"):
        raise ValueError(f"scheme must be 'letor4' or 'ohsumed', got {scheme!r}")
    folds = letor4_folds() if scheme == "letor4" else ohsumed_folds()
    f = folds[fold - 1]
    d = Path(directory)
    cache: dict[str, LetorData] = {}

    def part(name: str) -> LetorData:
        if name not in cache:
            cache[name] = read_letor(d / f"{name}.txt")
        return cache[name]

    return (
        concat([part(n) for n in f.train]),
        concat([part(n) for n in f.vali]),
        concat([part(n) for n in f.test]),
    )
