"""Preference-specific quality checks of each assessor (docs/analysis.md#beyond).

None of the peer tools reports these; they matter because position bias and inconsistency
are the known failure modes of pairwise judging:

- **Position bias**: the share of "left" wins among an assessor's strict pairwise answers,
  with an exact two-sided binomial test against 1/2. Sides are randomised per question, so an
  unbiased assessor wins "left" about half the time whatever the documents.
- **Self-consistency**: when the same assessor judged the same pair twice on a query (an
  answer undone and given again, a repeated question with the pair cache off, or a configured
  re-ask with sides swapped), whether the two answers express the same relation. Relations
  are taken on the unordered pair, so picking the same document on the other side agrees.
  Configured re-asks (task option ``reask_fraction``) are also counted apart when the caller
  names them (``reasks``: the (task_id, seq) of each re-ask answer, from
  ``TopKSession.reasks``), since only the log's config can tell them from other repeats.
- **Transitivity**: among the triples of documents whose three pairs the assessor compared
  directly, the share that no weak order (ranking with ties) can explain, e.g. a ≻ b ≻ c ≻ a,
  or a ∼ b, b ∼ c, a ≻ c. The relations are the protocol's answers
  (:func:`labeling.analysis.agreement.direct_relations`): re-ask answers named in ``reasks`` are
  left out, as they never reached the heap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any

from labeling.analysis.agreement import (
    Pair,
    Relation,
    direct_relations,
    flip,
    relation_from_outcome,
)
from labeling.analysis.records import JudgmentRecord, ReaskKeys, in_log_order, is_reask, live
from labeling.analysis.stats import binomial_test

# --- position bias ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PositionBias:
    """Left/right wins of one assessor; ``p_value`` of the two-sided binomial test vs 1/2."""

    assessor: str
    left: int
    right: int
    ties: int
    share_left: float | None
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def position_bias(judgments: Iterable[JudgmentRecord]) -> dict[str, PositionBias]:
    """Per assessor, over live pairwise answers: left wins / (left + right wins), binomial test.

    Ties and "not relevant" answers are not wins for either side and are left out of the test
    (ties are counted for information).
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in live(judgments):
        if not r.is_pair:
            continue
        c = counts[r.assessor]
        if r.outcome == "left":
            c[0] += 1
        elif r.outcome == "right":
            c[1] += 1
        elif r.outcome == "tie":
            c[2] += 1
    out: dict[str, PositionBias] = {}
    for assessor in sorted(counts):
        left, right, ties = counts[assessor]
        n = left + right
        out[assessor] = PositionBias(
            assessor=assessor,
            left=left,
            right=right,
            ties=ties,
            share_left=left / n if n else None,
            p_value=binomial_test(left, n, 0.5),
        )
    return out


# --- self-consistency -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RepeatedJudgment:
    """Two successive answers of one assessor to the same pair on one query.

    ``kind`` is "undo" when the first answer was undone (then given again), else "repeat"
    (both live: a repeated question or a re-ask). ``swapped``: the pair was shown with the
    sides exchanged the second time. ``first``/``second``: relations of ``pair[0]`` to
    ``pair[1]``. ``reask``: the second answer is a configured re-ask (a "repeat").
    """

    assessor: str
    query_id: str
    pair: Pair
    first: Relation
    second: Relation
    kind: str
    swapped: bool
    reask: bool = False

    @property
    def consistent(self) -> bool:
        return self.first == self.second


@dataclass(frozen=True, slots=True)
class SelfConsistency:
    """Counts of repeated judgments of one assessor and how many agreed, by kind."""

    assessor: str
    repeats: int
    consistent: int
    rate: float | None
    undo_repeats: int
    undo_consistent: int
    live_repeats: int
    live_consistent: int
    swapped_repeats: int
    swapped_consistent: int
    reask_repeats: int = 0
    reask_consistent: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def repeated_judgments(
    judgments: Iterable[JudgmentRecord],
    reasks: ReaskKeys = (),
) -> list[RepeatedJudgment]:
    """Every pair of successive answers of one assessor to one pair of one query.

    Uses the whole log (undone answers included), in the order the answers were made. With m
    answers to a pair there are m − 1 successive repeats. "not_relevant" answers are skipped.
    A repeat whose second answer is at a ``(task_id, seq)`` in ``reasks`` is marked ``reask``.
    """
    seen: dict[tuple[str, str, Pair], tuple[Relation, bool, str]] = {}
    out: list[RepeatedJudgment] = []
    for r in in_log_order(judgments):
        if not r.is_pair:
            continue
        assert r.left is not None and r.right is not None and r.outcome is not None
        found = relation_from_outcome(r.left, r.right, r.outcome)
        if found is None:
            continue
        key, rel = found
        slot = (r.assessor, r.query_id, key)
        previous = seen.get(slot)
        if previous is not None:
            prev_rel, prev_undone, prev_left = previous
            out.append(
                RepeatedJudgment(
                    assessor=r.assessor,
                    query_id=r.query_id,
                    pair=key,
                    first=prev_rel,
                    second=rel,
                    kind="undo" if prev_undone else "repeat",
                    swapped=prev_left != r.left,
                    reask=not prev_undone and is_reask(r, reasks),
                )
            )
        seen[slot] = (rel, r.undone, r.left)
    return out


def self_consistency(
    judgments: Iterable[JudgmentRecord],
    reasks: ReaskKeys = (),
) -> dict[str, SelfConsistency]:
    """Per assessor: how often a repeated judgment agreed with the previous one, by kind.

    ``reasks``: (task_id, seq) of the configured re-ask answers, counted in ``reask_*`` (they
    are live repeats with the sides swapped, so they are in those counts too).
    """
    groups: dict[str, list[RepeatedJudgment]] = defaultdict(list)
    for rep in repeated_judgments(judgments, reasks):
        groups[rep.assessor].append(rep)
    out: dict[str, SelfConsistency] = {}
    for assessor in sorted(groups):
        reps = groups[assessor]
        undo = [x for x in reps if x.kind == "undo"]
        again = [x for x in reps if x.kind == "repeat"]
        swapped = [x for x in reps if x.swapped]
        reasked = [x for x in reps if x.reask]
        consistent = sum(x.consistent for x in reps)
        out[assessor] = SelfConsistency(
            assessor=assessor,
            repeats=len(reps),
            consistent=consistent,
            rate=consistent / len(reps) if reps else None,
            undo_repeats=len(undo),
            undo_consistent=sum(x.consistent for x in undo),
            live_repeats=len(again),
            live_consistent=sum(x.consistent for x in again),
            swapped_repeats=len(swapped),
            swapped_consistent=sum(x.consistent for x in swapped),
            reask_repeats=len(reasked),
            reask_consistent=sum(x.consistent for x in reasked),
        )
    return out


# --- transitivity -----------------------------------------------------------------------------


def _rel(a: str, b: str, relations: Mapping[Pair, Relation]) -> Relation | None:
    """Relation of a to b from key-pair relations."""
    if a < b:
        return relations.get((a, b))
    rel = relations.get((b, a))
    return None if rel is None else flip(rel)


def _rank_relation(ra: int, rb: int) -> Relation:
    return ">" if ra < rb else "<" if ra > rb else "~"


# The 13 weak orders of three items as rank vectors (lower rank = better, equal = tie).
# A rank vector is a weak order when its ranks are dense (0..max all used); in lexicographic
# order, as itertools.product yields them.
_WEAK_ORDERS: tuple[tuple[int, int, int], ...] = tuple(
    (x, y, z)
    for x, y, z in product(range(3), repeat=3)
    if {x, y, z} == set(range(max(x, y, z) + 1))
)


def triple_is_transitive(ab: Relation, bc: Relation, ac: Relation) -> bool:
    """True when some weak order of {a, b, c} gives exactly these relations (a to b, b to c,
    a to c). Checked against all 13 weak orders of three items, so no case is forgotten."""
    return any(
        _rank_relation(x, y) == ab and _rank_relation(y, z) == bc and _rank_relation(x, z) == ac
        for x, y, z in _WEAK_ORDERS
    )


@dataclass(frozen=True, slots=True)
class Transitivity:
    """Fully judged triples of one assessor and how many are intransitive."""

    assessor: str
    triples: int
    intransitive: int
    rate: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def intransitive_triples(relations: Mapping[Pair, Relation]) -> tuple[int, int]:
    """(fully judged triples, intransitive ones) in one assessor's relations on one query.

    A triple counts when all three of its pairs have a relation. Enumerated from the judged
    pairs (common neighbours), so the cost follows the number of judgments, not n³.
    """
    neighbours: dict[str, set[str]] = defaultdict(set)
    for a, b in relations:
        neighbours[a].add(b)
        neighbours[b].add(a)
    triples = bad = 0
    for a, b in relations:  # a < b
        for c in neighbours[a] & neighbours[b]:
            if c <= b:  # count each triple once, at its ordering a < b < c
                continue
            triples += 1
            ab, bc, ac = _rel(a, b, relations), _rel(b, c, relations), _rel(a, c, relations)
            # c is a common neighbour of a and b, so all three pairs were judged.
            assert ab is not None and bc is not None and ac is not None
            if not triple_is_transitive(ab, bc, ac):
                bad += 1
    return triples, bad


def transitivity(
    judgments: Iterable[JudgmentRecord], reasks: ReaskKeys = ()
) -> dict[str, Transitivity]:
    """Per assessor, over their live direct pairwise judgments on every query (the protocol's
    answers: the re-asks at ``(task_id, seq)`` in ``reasks`` are left out)."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (_query, assessor), rels in direct_relations(judgments, reasks).items():
        t, b = intransitive_triples(rels)
        totals[assessor][0] += t
        totals[assessor][1] += b
    return {a: Transitivity(a, t, b, b / t if t else None) for a, (t, b) in sorted(totals.items())}
