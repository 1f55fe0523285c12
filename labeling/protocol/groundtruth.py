"""Ground truth produced by the judging protocols (docs/protocols.md).

Top-k ground truth (tool T1): an ordered list ``T = (t_1 ≻ … ≻ t_m)`` (``m = min(k, n)``) and
an unordered rest ``F = D \\ T``, with the implied preferences ``t_i ≻ t_j`` (``i < j``) and
``t ≻ f`` for every ``t ∈ T, f ∈ F``: ``m(m-1)/2 + m(n-m)`` pairs. Pairs inside F are unknown.

κ-labels (Niu et al. 2012 §3.2.1): ``y_d = k + 1 - pos(d)`` for ``d ∈ T`` (1-based), ``0`` for
``d ∈ F``; for ``n < k`` the labels run ``k … k-n+1`` so that ``y_max = k`` is comparable across
queries. They come from the project's one κ-label function,
:func:`ranking.io.topk.kappa_labels`, and a result turns into the one top-k truth type
the exports and the evaluator share with :meth:`TopKResult.truth`.

The raw judgments are kept beside the implied pairs and never merged with them: an
inconsistent assessor may have judged a pair against what the heap finally implies
(the paper leaves this open), which :class:`ImpliedPair` reports as ``contradicted``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ranking.io.topk import TopKTruth
from ranking.io.topk import kappa_labels as kappa_labels_from_topk


@dataclass(frozen=True, slots=True)
class PairJudgment:
    """One protocol comparison ``prefer(a, b)`` and its answer.

    ``winner`` is the preferred document or ``None`` for a tie. ``not_relevant``: the
    challenger ``a`` was marked not relevant (then ``winner == b``). ``cached``: answered from
    the pair cache, not posed to the assessor (costs no judgment). ``machine``: answered by the
    task's machine (a ``+assist`` strategy, docs/machine-judges.md#assisted-strategies), not
    by a person.
    """

    a: str
    b: str
    winner: str | None
    not_relevant: bool = False
    cached: bool = False
    machine: bool = False


@dataclass(frozen=True, slots=True)
class ImpliedPair:
    """``better ≻ worse`` as implied by the top-k output.

    ``direct``: the assessor judged this pair with exactly this preference (posed, either
    orientation). ``contradicted``: some direct judgment preferred ``worse``. Neither: the
    preference follows by transitivity through the heap (or the pair was judged a tie, or the
    worse document was called "not relevant", which judges the challenger alone and is not a
    comparison of the pair, as in :mod:`labeling.analysis.agreement`).
    """

    better: str
    worse: str
    direct: bool
    contradicted: bool = False

    @property
    def transitive(self) -> bool:
        """True when the pair was not judged directly with this preference."""
        return not self.direct


@dataclass(frozen=True)
class TopKResult:
    """The top-k ground truth of one (assessor, query) session.

    ``top``: best first. ``rest``: eviction/discard order (kept for the record; semantically a set).
    ``judgments``: questions posed to the assessor, re-asks included. ``calls``: protocol
    comparisons including those answered from the pair cache (docs/protocols.md#pair-cache:
    report both). ``reasks``: how many of the ``judgments`` were swapped re-asks (task option
    ``reask_fraction``); their answers are in ``reasked`` and never shaped ``top``/``rest``,
    so they take no part in :meth:`implied_pairs` either.
    """

    k: int
    n: int
    top: list[str]
    rest: list[str]
    kappa_labels: dict[str, int]
    judgments: int
    calls: int = 0
    judged: tuple[PairJudgment, ...] = field(default=(), repr=False)
    reasks: int = 0
    reasked: tuple[PairJudgment, ...] = field(default=(), repr=False)
    broken: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        k: int,
        top: Sequence[str],
        rest: Sequence[str],
        judged: Sequence[PairJudgment] = (),
        reasked: Sequence[PairJudgment] = (),
        *,
        judgments: int | None = None,
        broken: dict[str, str] | None = None,
    ) -> TopKResult:
        """Assemble a result, deriving n, κ-labels and the judgment counts.

        ``broken``: documents the assessor marked broken (id -> reason;
        docs/protocols.md#broken-documents). They are in neither ``top`` nor ``rest``, so
        ``n`` and the κ-labels cover the remaining documents only; ``judgments`` (default:
        the posed questions in ``judged`` plus the re-asks) is then the length of the log,
        which also holds the broken answers and the answers about pairs with a broken
        document."""
        judged = tuple(judged)
        reasked = tuple(reasked)
        if judgments is None:
            judgments = sum(1 for j in judged if not j.cached) + len(reasked)
        return cls(
            k=k,
            n=len(top) + len(rest),
            top=list(top),
            rest=list(rest),
            kappa_labels=kappa_labels_from_topk(top, rest, k),
            judgments=judgments,
            calls=len(judged),
            judged=judged,
            reasks=len(reasked),
            reasked=reasked,
            broken=dict(broken or {}),
        )

    def truth(self, query_id: str, **extra: Any) -> TopKTruth:
        """This result as the top-k ground truth of query ``query_id`` (the type the top-k
        JSONL files hold): ``top`` and ``rest`` as here, ``extra`` (assessor, task id, ...)
        kept beside them."""
        return TopKTruth(query_id, self.k, tuple(self.top), tuple(self.rest), extra)

    def ranking(self) -> list[str]:
        """Top in order, then the rest (whose internal order carries no preference)."""
        return [*self.top, *self.rest]

    def _direct(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        strict: set[tuple[str, str]] = set()
        for j in self.judged:
            # Cached: the posed answer is already here. Ties and not-relevant: no preference
            # between the two documents was stated.
            if j.cached or j.winner is None or j.not_relevant:
                continue
            loser = j.b if j.winner == j.a else j.a
            strict.add((j.winner, loser))
        return strict, {(w, lo) for (lo, w) in strict}

    def implied_pairs(self) -> Iterator[ImpliedPair]:
        """Every implied preference: inside the top by position, then every top over every rest.

        ``m(m-1)/2 + m(n-m)`` pairs with ``m = len(top)``.
        """
        said, reversed_ = self._direct()
        for i, better in enumerate(self.top):
            for worse in self.top[i + 1 :]:
                key = (better, worse)
                yield ImpliedPair(better, worse, key in said, key in reversed_)
        for better in self.top:
            for worse in self.rest:
                key = (better, worse)
                yield ImpliedPair(better, worse, key in said, key in reversed_)

    def preference_pairs(self) -> list[tuple[str, str]]:
        """The implied pairs as ``(better, worse)`` tuples."""
        return [(p.better, p.worse) for p in self.implied_pairs()]


@dataclass(frozen=True)
class GradedResult:
    """The five-grade result (tool T2): one grade in 0..4 per document."""

    grades: dict[str, int]
    judgments: int
    order: tuple[str, ...] = ()
    #: Documents marked broken (id -> reason): skipped, so they have no grade.
    broken: dict[str, str] = field(default_factory=dict)
