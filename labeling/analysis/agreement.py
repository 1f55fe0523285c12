"""Inter-assessor agreement on pairwise preferences (Niu et al., SIGIR 2012, §4.1, Tables 2–3).

The unit is a **co-judged pair instance** (docs/analysis.md#agreement): an unordered document
pair {A, B} of one query for which two different assessors U and V each have a relation in
{≻, ≺, ∼}. The pair is written in a canonical orientation (A, B), so a relation says "A ≻ B",
"A ≺ B" or "A ∼ B".

Where the relations come from:

- **T1, mode** ``direct`` (default): the pairs the assessor actually compared (the live
  judgments; a "tie" answer gives ∼; a "not relevant" answer is not a comparison and is
  skipped). Configured re-asks (task option ``reask_fraction``) are left out when the caller
  names them: the protocol kept the first answer, so that is the assessor's relation here;
  re-asks are measured by :mod:`labeling.analysis.consistency` instead. Among the protocol's own
  answers to a pair (pair cache off) the later live one counts, as it was the later one the
  heap acted on.
- **T1, mode** ``inferred``: every pair of the pool, from the assessor's top-k ground truth
  (T, F): both in T by position; T over F; both in F ∼ (order unknown, counted as a tie).
- **T2** (five grades): every pair of the graded documents; the higher grade is preferred and
  equal grades are a tie (Table 3).

Canonical orientation: the left/right order in which the pair was first displayed in the
study (``first_display_orientation``); for inferred relations the ascending doc-id order.

Tables (``AgreementTable``): C[X1][X2] counts the instances where U said X1 and V said X2 (U is
the assessor whose name sorts first); the symmetrised M = C + Cᵀ counts every instance once in
each direction, so "one assessor / another assessor" does not depend on naming; the Table 2/3
matrix is M row-normalised, P(X2 | X1). Overall agreement = equal relations / instances;
agreement ignoring ties = (≻,≻) + (≺,≺) over the instances where neither side is ∼; Cohen's κ
over the three outcomes from C (it is symmetric in U and V).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

from labeling.analysis.records import JudgmentRecord, ReaskKeys, TaskRecord, is_reask, live
from labeling.analysis.stats import ChiSquare, chi2_2x2, cohen_kappa

Relation = Literal[">", "<", "~"]
PREFERRED: Relation = ">"
DISPREFERRED: Relation = "<"
TIE: Relation = "~"
#: Row and column order of every table: A ≻ B, A ≺ B, A ∼ B (as in the paper's Tables 2–3).
RELATIONS: tuple[Relation, Relation, Relation] = (">", "<", "~")
SYMBOLS: dict[Relation, str] = {">": "≻", "<": "≺", "~": "∼"}
_INDEX: dict[Relation, int] = {rel: i for i, rel in enumerate(RELATIONS)}
_FLIP: dict[Relation, Relation] = {">": "<", "<": ">", "~": "~"}

Mode = Literal["direct", "inferred"]
MODES: tuple[Mode, ...] = ("direct", "inferred")

Pair = tuple[str, str]
"""An unordered pair as its key: the two doc ids in ascending order."""

Relations = dict[Pair, Relation]
"""One assessor's relations on one query: key pair (a, b), a < b -> relation of a to b."""

Matrix = tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]


def pair_key(x: str, y: str) -> Pair:
    """The key of the unordered pair {x, y} (ascending doc ids)."""
    if x == y:
        raise ValueError(f"a pair needs two different documents, got {x!r} twice")
    return (x, y) if x < y else (y, x)


def flip(rel: Relation) -> Relation:
    """The same relation seen from the other side: ≻ ↔ ≺, ∼ stays."""
    return _FLIP[rel]


def relation_from_outcome(left: str, right: str, outcome: str) -> tuple[Pair, Relation] | None:
    """The relation of a pairwise answer, on its key pair.

    "left" means left ≻ right, "right" means left ≺ right, "tie" means ∼. "not_relevant" is not
    a comparison of the two documents (it removes the challenger), so it gives None.
    """
    key = pair_key(left, right)
    if outcome == "left":
        rel: Relation = PREFERRED
    elif outcome == "right":
        rel = DISPREFERRED
    elif outcome == "tie":
        rel = TIE
    elif outcome == "not_relevant":
        return None
    else:
        raise ValueError(f"unknown outcome {outcome!r} for pair ({left!r}, {right!r})")
    # The relation above is of `left` to `right`; express it for the key order.
    return key, (rel if key[0] == left else flip(rel))


def relation_from_topk(top: Sequence[str], rest: Iterable[str], a: str, b: str) -> Relation | None:
    """Relation of a to b implied by a top-k ground truth T = ``top`` (best first), F = ``rest``.

    Both in T: by position (earlier is preferred); one in T: it wins; both in F: ∼ (unknown,
    counted as a tie, docs/analysis.md#agreement). None if either document is in neither list.
    """
    position = {doc: i for i, doc in enumerate(top)}
    rest_set = set(rest)
    return _topk_relation(position, rest_set, a, b)


def _topk_relation(position: Mapping[str, int], rest: set[str], a: str, b: str) -> Relation | None:
    pa, pb = position.get(a), position.get(b)
    if pa is not None and pb is not None:
        return PREFERRED if pa < pb else DISPREFERRED
    if pa is not None:
        return PREFERRED if b in rest else None
    if pb is not None:
        return DISPREFERRED if a in rest else None
    if a in rest and b in rest:
        return TIE
    return None


def relation_from_grades(grades: Mapping[str, int], a: str, b: str) -> Relation | None:
    """Relation of a to b inferred from five-grade judgments: higher grade preferred, equal ∼.

    None if either document has no grade.
    """
    if a not in grades or b not in grades:
        return None
    return _grade_relation(grades[a], grades[b])


def _grade_relation(ga: int, gb: int) -> Relation:
    """≻ if grade ga is higher than gb, ≺ if lower, ∼ if equal (Table 3)."""
    return PREFERRED if ga > gb else DISPREFERRED if ga < gb else TIE


# --- relations per (query, assessor) ----------------------------------------------------------

QueryAssessor = tuple[str, str]


def direct_relations(
    judgments: Iterable[JudgmentRecord], reasks: ReaskKeys = ()
) -> dict[QueryAssessor, Relations]:
    """The pairs each assessor actually compared, per (query_id, assessor), as the protocol saw
    them.

    Live pairwise judgments only, without the re-ask answers at ``(task_id, seq)`` in
    ``reasks`` (they never reached the heap). When a pair was compared more than once by the
    protocol (pair cache off) the answer latest in the log counts. "not_relevant" answers are
    skipped.
    """
    out: dict[QueryAssessor, Relations] = defaultdict(dict)
    for r in live(judgments):
        if not r.is_pair or is_reask(r, reasks):
            continue
        assert r.left is not None and r.right is not None and r.outcome is not None
        found = relation_from_outcome(r.left, r.right, r.outcome)
        if found is not None:
            key, rel = found
            out[(r.query_id, r.assessor)][key] = rel
    return dict(out)


def topk_relations(tasks: Iterable[TaskRecord]) -> dict[QueryAssessor, Relations]:
    """Every pair of the pool with the relation implied by the task's top-k ground truth.

    Only topk tasks that have a result (``top`` and ``rest`` set) contribute.
    """
    out: dict[QueryAssessor, Relations] = {}
    for task in tasks:
        if task.method != "topk" or task.top is None or task.rest is None:
            continue
        position = {doc: i for i, doc in enumerate(task.top)}
        rest = set(task.rest)
        docs = sorted([*task.top, *task.rest])
        rels: Relations = out.setdefault((task.query_id, task.assessor), {})
        for a, b in combinations(docs, 2):
            rel = _topk_relation(position, rest, a, b)
            if rel is not None:
                rels[(a, b)] = rel
    return out


def grades_by_assessor(judgments: Iterable[JudgmentRecord]) -> dict[QueryAssessor, dict[str, int]]:
    """The live grade of each document per (query_id, assessor); a later live grade wins."""
    out: dict[QueryAssessor, dict[str, int]] = defaultdict(dict)
    for r in live(judgments):
        if r.is_grade:
            assert r.doc_id is not None and r.grade is not None
            out[(r.query_id, r.assessor)][r.doc_id] = r.grade
    return dict(out)


def grade_relations(
    grades: Mapping[QueryAssessor, Mapping[str, int]],
) -> dict[QueryAssessor, Relations]:
    """Every pair of graded documents, with the relation inferred from the grades (Table 3)."""
    out: dict[QueryAssessor, Relations] = {}
    for qa, doc_grades in grades.items():
        out[qa] = {
            (a, b): _grade_relation(doc_grades[a], doc_grades[b])
            for a, b in combinations(sorted(doc_grades), 2)
        }
    return out


def first_display_orientation(judgments: Iterable[JudgmentRecord]) -> dict[tuple[str, Pair], Pair]:
    """Canonical orientation of each displayed pair: (left, right) of its first display.

    Keyed by (query_id, key pair). "First" is the earliest ``created_at`` when every record
    has one, else the lowest (task, seq); undone judgments count (the pair was shown).
    """
    rows = [r for r in judgments if r.is_pair]
    if rows and all(r.created_at is not None for r in rows):
        rows.sort(key=lambda r: (r.created_at, str(r.task_id), r.seq))
    else:
        rows.sort(key=lambda r: (str(r.task_id), r.seq))
    out: dict[tuple[str, Pair], Pair] = {}
    for r in rows:
        assert r.left is not None and r.right is not None
        out.setdefault((r.query_id, pair_key(r.left, r.right)), (r.left, r.right))
    return out


# --- co-judged instances ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairInstance:
    """One co-judged pair instance: U's and V's relations of ``a`` to ``b`` on one query."""

    query_id: str
    a: str
    b: str
    assessor_u: str
    assessor_v: str
    u: Relation
    v: Relation


def co_judged(
    relations: Mapping[QueryAssessor, Mapping[Pair, Relation]],
    orientation: Mapping[tuple[str, Pair], Pair] | None = None,
) -> list[PairInstance]:
    """Every co-judged pair instance, over every query and every pair of different assessors.

    ``relations`` maps (query_id, assessor) to that assessor's relations (on key pairs). An
    instance exists for each key pair both assessors have. With ``orientation`` the pair is
    written as (first shown left, first shown right) when it has an entry there, else in
    ascending doc-id order. U is the assessor whose name sorts first. Deterministic order.
    """
    by_query: dict[str, dict[str, Mapping[Pair, Relation]]] = defaultdict(dict)
    for (query_id, assessor), rels in relations.items():
        by_query[query_id][assessor] = rels
    out: list[PairInstance] = []
    for query_id in sorted(by_query):
        assessors = by_query[query_id]
        for u, v in combinations(sorted(assessors), 2):
            ru, rv = assessors[u], assessors[v]
            small, large = (ru, rv) if len(ru) <= len(rv) else (rv, ru)
            for key in sorted(k for k in small if k in large):
                rel_u, rel_v = ru[key], rv[key]
                a, b = key
                if orientation is not None:
                    shown = orientation.get((query_id, key))
                    if shown is not None and shown[0] != key[0]:
                        a, b = b, a
                        rel_u, rel_v = flip(rel_u), flip(rel_v)
                out.append(PairInstance(query_id, a, b, u, v, rel_u, rel_v))
    return out


# --- tables -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgreementTable:
    """Agreement of a set of co-judged instances (one query, or pooled).

    ``counts`` = C (rows: U's relation, columns: V's, order ≻ ≺ ∼); ``symmetric`` = C + Cᵀ;
    ``conditional`` = row-normalised ``symmetric``, P(another says X2 | one says X1), None for a
    row with no instances. Ratios are None when their denominator is 0.
    """

    counts: Matrix
    symmetric: Matrix
    conditional: tuple[tuple[float | None, ...], ...]
    instances: int
    agreed: int
    instances_no_tie: int
    agreed_no_tie: int
    agreement: float | None
    agreement_no_tie: float | None
    kappa: float | None

    @property
    def disagreed(self) -> int:
        return self.instances - self.agreed

    @property
    def disagreed_no_tie(self) -> int:
        return self.instances_no_tie - self.agreed_no_tie

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (relations labelled ">", "<", "~" in table order)."""
        return {
            "relations": list(RELATIONS),
            "counts": [list(row) for row in self.counts],
            "symmetric": [list(row) for row in self.symmetric],
            "conditional": [list(row) for row in self.conditional],
            "instances": self.instances,
            "agreed": self.agreed,
            "agreement": self.agreement,
            "instances_no_tie": self.instances_no_tie,
            "agreed_no_tie": self.agreed_no_tie,
            "agreement_no_tie": self.agreement_no_tie,
            "kappa": self.kappa,
        }


def table_from_counts(counts: Sequence[Sequence[int]]) -> AgreementTable:
    """All the agreement figures of a 3×3 count matrix C (rows U, columns V; ≻ ≺ ∼)."""
    if len(counts) != 3 or any(len(row) != 3 for row in counts):
        raise ValueError(f"count matrix must be 3×3, got {[list(r) for r in counts]!r}")
    c = _matrix(counts)
    for i in range(3):
        for j in range(3):
            if c[i][j] < 0:
                raise ValueError(f"count matrix entry [{i}][{j}] is negative: {c[i][j]}")
    m = _matrix([[c[i][j] + c[j][i] for j in range(3)] for i in range(3)])
    conditional = tuple(tuple((x / sum(row)) if sum(row) else None for x in row) for row in m)
    n = sum(map(sum, c))
    agreed = c[0][0] + c[1][1] + c[2][2]
    n_no_tie = c[0][0] + c[0][1] + c[1][0] + c[1][1]
    agreed_no_tie = c[0][0] + c[1][1]
    return AgreementTable(
        counts=c,
        symmetric=m,
        conditional=conditional,
        instances=n,
        agreed=agreed,
        instances_no_tie=n_no_tie,
        agreed_no_tie=agreed_no_tie,
        agreement=agreed / n if n else None,
        agreement_no_tie=agreed_no_tie / n_no_tie if n_no_tie else None,
        kappa=cohen_kappa(c),
    )


def count_matrix(pairs: Iterable[tuple[Relation, Relation]]) -> Matrix:
    """C[X1][X2] = number of (U's relation, V's relation) pairs equal to (X1, X2)."""
    c = [[0, 0, 0] for _ in range(3)]
    for rel_u, rel_v in pairs:
        c[_INDEX[rel_u]][_INDEX[rel_v]] += 1
    return _matrix(c)


def _matrix(rows: Sequence[Sequence[int]]) -> Matrix:
    """A 3×3 count matrix (already checked to be 3×3) as the :data:`Matrix` tuple."""
    a, b, c = ((int(row[0]), int(row[1]), int(row[2])) for row in rows)
    return a, b, c


def agreement_table(instances: Iterable[PairInstance]) -> AgreementTable:
    """The agreement table of a set of instances (pool them by passing them all)."""
    return table_from_counts(count_matrix((i.u, i.v) for i in instances))


def agreement_by_query(instances: Iterable[PairInstance]) -> dict[str, AgreementTable]:
    """One table per query (over every assessor pair of that query)."""
    groups: dict[str, list[PairInstance]] = defaultdict(list)
    for inst in instances:
        groups[inst.query_id].append(inst)
    return {q: agreement_table(groups[q]) for q in sorted(groups)}


def agreement_by_assessor_pair(
    instances: Iterable[PairInstance],
) -> dict[tuple[str, str], AgreementTable]:
    """One table per pair of assessors (U, V), pooled over their common queries."""
    groups: dict[tuple[str, str], list[PairInstance]] = defaultdict(list)
    for inst in instances:
        groups[(inst.assessor_u, inst.assessor_v)].append(inst)
    return {p: agreement_table(groups[p]) for p in sorted(groups)}


# --- comparing two methods (the paper's χ² tests) -----------------------------------------------


@dataclass(frozen=True, slots=True)
class MethodComparison:
    """χ² tests of "agreement differs between the two methods" (docs/analysis.md#chi-square).

    ``overall``: rows (method A, method B) × (agreed, disagreed); ``no_tie``: the same on the
    instances without a tie on either side. None where the test is undefined (a zero margin).
    """

    overall: ChiSquare | None
    no_tie: ChiSquare | None


def compare_methods(
    a: AgreementTable, b: AgreementTable, *, yates: bool = False
) -> MethodComparison:
    """The paper's two χ² tests (df = 1) between the agreement of method A and of method B."""
    return MethodComparison(
        overall=_safe_chi2(((a.agreed, a.disagreed), (b.agreed, b.disagreed)), yates),
        no_tie=_safe_chi2(
            ((a.agreed_no_tie, a.disagreed_no_tie), (b.agreed_no_tie, b.disagreed_no_tie)), yates
        ),
    )


def _safe_chi2(table: tuple[tuple[int, int], tuple[int, int]], yates: bool) -> ChiSquare | None:
    try:
        return chi2_2x2(table, yates=yates)
    except ValueError:  # a zero row or column: no test is possible, report it as absent
        return None


# --- study level ------------------------------------------------------------------------------


def study_relations(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    *,
    method: str,
    mode: Mode = "direct",
    reasks: ReaskKeys = (),
) -> dict[QueryAssessor, Relations]:
    """The relations of one method's assessors: T1 per ``mode`` (``direct`` without the
    ``reasks`` answers); T2 always from the grades."""
    if mode not in MODES:
        raise ValueError(f"unknown agreement mode {mode!r}; expected one of {MODES}")
    if method == "topk":
        rows = [r for r in judgments if r.method == "topk"]
        return direct_relations(rows, reasks) if mode == "direct" else topk_relations(tasks)
    if method == "graded":
        return grade_relations(grades_by_assessor(r for r in judgments if r.method == "graded"))
    raise ValueError(f"unknown method {method!r}; expected 'topk' or 'graded'")


def study_instances(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    *,
    method: str,
    mode: Mode = "direct",
    reasks: ReaskKeys = (),
) -> list[PairInstance]:
    """Co-judged instances of one method, in the canonical orientation (docs/analysis.md#agreement).

    T1 ``direct``: the orientation of first display (a re-ask always comes after the question
    it repeats, so it never decides the orientation); T1 ``inferred`` and T2: ascending doc id.
    ``reasks``: the re-ask answers to leave out of the T1 direct relations.
    """
    rels = study_relations(judgments, tasks, method=method, mode=mode, reasks=reasks)
    orientation = None
    if method == "topk" and mode == "direct":
        orientation = first_display_orientation(r for r in judgments if r.method == "topk")
    return co_judged(rels, orientation)


def topk_overlap(tasks: Iterable[TaskRecord]) -> list[dict[str, Any]]:
    """Top-k set overlap per query and assessor pair: |T_U ∩ T_V| and Jaccard |∩| / |∪|."""
    by_query: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
    for t in tasks:
        if t.method == "topk" and t.top is not None:
            by_query[t.query_id][t.assessor] = t.top
    out: list[dict[str, Any]] = []
    for q in sorted(by_query):
        for u, v in combinations(sorted(by_query[q]), 2):
            tu, tv = set(by_query[q][u]), set(by_query[q][v])
            union = tu | tv
            out.append(
                {
                    "query_id": q,
                    "assessors": [u, v],
                    "common": len(tu & tv),
                    "jaccard": len(tu & tv) / len(union) if union else None,
                }
            )
    return out
