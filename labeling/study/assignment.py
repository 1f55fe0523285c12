"""Assigning queries to assessors for a labeling study (docs/analysis.md#design).

The paper's requirements for a study that compares tool T1 (top-k, ``"topk"``) with tool T2
(five grades, ``"graded"``):

(a) for each method, every selected query (and so every pooled document) is judged at least once;
(b) no assessor sees the same query under both tools (memory/order effects);
(c) every assessor uses both tools (individual differences average out).

Two planners produce a :class:`Plan` (a list of ``(assessor, query, method, label)`` entries):

* :func:`fold_rotation` — the paper's scheme. Split the queries into m folds Q_1..Q_m (m =
  number of assessors); in assignment 1 assessor U_i judges Q_i with T1 and Q_{i+1} with T2
  (indices mod m, so U_m does Q_m and Q_1). Agreement needs two assessors per query and tool, so
  a second assignment is added with shift-by-2 (docs/analysis.md#design): U_i judges Q_{i+2} with T1
  and Q_{i+3} with T2. Generally assignment j with shift s_j gives U_i T1 on Q_{i+s_j} and T2 on
  Q_{i+s_j+1}; (b) holds iff all 2·len(shifts) folds per assessor are distinct.
* :func:`plan_balanced` — the general form: ``per_query = {"topk": a, "graded": b}`` assessors
  per query and method, any assessor/query counts, seeded, with (b) by construction and balanced
  loads (greedy least-loaded choice; see the function).

:func:`validate_plan` checks any plan (generated or imported from CSV) and reports *every*
violated constraint; :mod:`labeling.study.plan_csv` exchanges plans as CSV.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from labeling.errors import ConfigError
from labeling.protocol.types import METHODS, Method

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True, order=True)
class PlanEntry:
    """One task to create: ``assessor`` judges ``query_id`` with ``method``.

    ``label`` names the assignment round (``"A1"``, ``"A2"`` for the rotation), stored as the
    task's plan label so exports can pick "the first assignment" (docs/exports.md).
    """

    assessor: str
    query_id: str
    method: Method
    label: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """A study plan: the entries plus the assessors and queries it was made for.

    ``assessors``/``query_ids`` matter for validation: an assessor without any entry still
    violates (c), and a query without entries still violates (a).
    """

    entries: tuple[PlanEntry, ...]
    assessors: tuple[str, ...]
    query_ids: tuple[str, ...]

    def load(self) -> dict[str, dict[str, int]]:
        """Per assessor (all listed): ``{"topk": n1, "graded": n2, "total": n1 + n2}``."""
        out = {a: {"topk": 0, "graded": 0, "total": 0} for a in self.assessors}
        for e in self.entries:
            row = out.setdefault(e.assessor, {"topk": 0, "graded": 0, "total": 0})
            row[e.method] += 1
            row["total"] += 1
        return out

    def grid(self) -> dict[str, dict[str, list[PlanEntry]]]:
        """Assessor × query grid for a preview: ``grid[assessor][query_id]`` = entries there.

        A cell with more than one entry is a conflict that :func:`validate_plan` reports.
        """
        out: dict[str, dict[str, list[PlanEntry]]] = {a: {} for a in self.assessors}
        for e in self.entries:
            out.setdefault(e.assessor, {}).setdefault(e.query_id, []).append(e)
        return out

    def by_query(self) -> dict[str, dict[Method, list[str]]]:
        """Per query and method, the assessors (in entry order)."""
        out: dict[str, dict[Method, list[str]]] = {
            q: {"topk": [], "graded": []} for q in self.query_ids
        }
        for e in self.entries:
            out.setdefault(e.query_id, {"topk": [], "graded": []})[e.method].append(e.assessor)
        return out


@dataclass(frozen=True, slots=True)
class Violation:
    """One violated constraint. ``code`` is stable for programs; ``message`` is for people.

    Codes: ``duplicate`` (same assessor, query and method twice), ``both_methods`` (b),
    ``coverage`` (a: a query has fewer assessors for a method than required), ``excess``
    (more than required), ``one_tool`` (c), ``unknown_assessor``, ``unknown_query``,
    ``unknown_method``, ``unbalanced`` (warning: loads differ by more than one).
    """

    code: str
    message: str
    severity: Severity = "error"
    assessor: str | None = None
    query_id: str | None = None
    method: str | None = None


class PlanError(ConfigError):
    """A planner could not produce a plan that satisfies the constraints."""

    def __init__(self, message: str, violations: Sequence[Violation] = ()) -> None:
        self.violations = list(violations)
        super().__init__(message)


# ---------------------------------------------------------------------------------------------
# Paper's fold rotation
# ---------------------------------------------------------------------------------------------


def _check_names(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    names = tuple(str(n) for n in names)
    if any(not n for n in names):
        raise ConfigError(f"{kind} names must be non-empty")
    dupes = sorted(n for n, c in Counter(names).items() if c > 1)
    if dupes:
        raise ConfigError(f"duplicate {kind}: {', '.join(dupes[:5])}")
    return names


def folds(query_ids: Sequence[str], m: int) -> list[tuple[str, ...]]:
    """Split queries, in the given order, into ``m`` contiguous folds.

    Sizes differ by at most one; the first ``n mod m`` folds get the extra query (50 queries,
    5 folds -> 10 each, as in the paper).
    """
    if m < 1:
        raise ConfigError("need at least one fold")
    n = len(query_ids)
    base, extra = divmod(n, m)
    out: list[tuple[str, ...]] = []
    start = 0
    for i in range(m):
        size = base + (1 if i < extra else 0)
        out.append(tuple(query_ids[start : start + size]))
        start += size
    return out


def fold_rotation(
    assessors: Sequence[str],
    query_ids: Sequence[str],
    *,
    shifts: Sequence[int] = (0, 2),
) -> Plan:
    """The paper's fold rotation with one assignment per entry of ``shifts`` (docs/analysis.md).

    With m assessors U_1..U_m (in the given order) and folds Q_1..Q_m (:func:`folds`),
    assignment j gives U_i ``topk`` on Q_{i+s_j} and ``graded`` on Q_{i+s_j+1} (indices mod m).
    ``shifts=(0,)`` is the paper's single assignment; the default ``(0, 2)`` adds the
    shift-by-2 second assignment, so every query gets two assessors per method and every
    assessor sees four distinct folds. Entries are labelled ``A1``, ``A2``, ...

    Raises :class:`PlanError` when the result would break (a)-(c): fewer than two assessors,
    fewer queries than assessors (some assessor would get an empty fold), or shifts that make an
    assessor meet a fold twice (e.g. shifts 0 and 1, or two assignments with m < 4).
    """
    assessors = _check_names("assessor", assessors)
    query_ids = _check_names("query", query_ids)
    m = len(assessors)
    shifts = tuple(int(s) for s in shifts)
    if not shifts:
        raise PlanError("fold rotation needs at least one assignment (shifts)")
    if m < 2:
        raise PlanError("fold rotation needs at least two assessors (each uses both tools)")
    if len(query_ids) < m:
        raise PlanError(
            f"fold rotation needs at least as many queries as assessors "
            f"({len(query_ids)} < {m}); use the balanced planner instead"
        )
    used = [(s + d) % m for s in shifts for d in (0, 1)]
    if len(set(used)) != len(used):
        raise PlanError(
            f"shifts {list(shifts)} make an assessor meet the same fold twice with "
            f"{m} assessors (requirement b); with m assessors at most m//2 assignments fit, "
            f"e.g. shifts (0, 2) for m >= 4"
        )
    fold_list = folds(query_ids, m)
    entries: list[PlanEntry] = []
    for j, s in enumerate(shifts, start=1):
        label = f"A{j}"
        for i, assessor in enumerate(assessors):
            for q in fold_list[(i + s) % m]:
                entries.append(PlanEntry(assessor, q, "topk", label))
            for q in fold_list[(i + s + 1) % m]:
                entries.append(PlanEntry(assessor, q, "graded", label))
    return Plan(tuple(entries), assessors, query_ids)


# ---------------------------------------------------------------------------------------------
# General balanced planner
# ---------------------------------------------------------------------------------------------


def _check_per_query(per_query: Mapping[str, int]) -> dict[Method, int]:
    unknown = sorted(set(per_query) - set(METHODS))
    if unknown:
        raise ConfigError(f"unknown method(s) in per_query: {', '.join(unknown)}")
    out: dict[Method, int] = {m: int(per_query.get(m, 0)) for m in METHODS}
    if any(v < 0 for v in out.values()):
        raise ConfigError("assessors per query must be >= 0")
    if sum(out.values()) == 0:
        raise ConfigError("per_query asks for no assessors at all")
    return out


def plan_balanced(
    assessors: Sequence[str],
    query_ids: Sequence[str],
    *,
    per_query: Mapping[str, int] | None = None,
    seed: int = 0,
    label: str = "",
) -> Plan:
    """General planner: ``per_query[method]`` distinct assessors per query and method.

    Construction (a = topk assessors per query, b = graded ones, m assessors, n queries;
    assessors and queries are first put in a seeded random order):

    1. ``topk`` round-robin: slot s = q·a + i (i < a) goes to assessor (s + ⌊s/L⌋) mod m,
       L = lcm(a, m), so topk loads are ⌊na/m⌋ or ⌈na/m⌉ and the groups rotate.
    2. ``graded`` by an exact bipartite b-matching (max flow, :mod:`scipy.sparse.csgraph`):
       source → query (capacity b) → each assessor *not* doing that query with topk
       (capacity 1, which is requirement b) → sink (capacity g_p). The targets g_p are ⌊nb/m⌋
       or ⌈nb/m⌉, the larger ones going first to assessors with fewer topk tasks, so total loads
       also differ by at most one. If the flow cannot reach n·b with these targets (tiny or
       lopsided studies), the targets are relaxed one step at a time; the
       ``unbalanced`` warning of :func:`validate_plan` then tells the admin.

    Balanced per-method loads imply requirement (c) whenever it is satisfiable
    (n·a ≥ m and n·b ≥ m). Raises :class:`PlanError` when a query needs more assessors than
    exist.
    """
    assessors = _check_names("assessor", assessors)
    query_ids = _check_names("query", query_ids)
    need = _check_per_query(per_query or {"topk": 2, "graded": 2})
    m, n = len(assessors), len(query_ids)
    a, b = need["topk"], need["graded"]
    if a + b > m:
        raise PlanError(
            f"each query needs {a + b} different assessors "
            f"({a} topk + {b} graded) but only {m} exist"
        )
    rng = random.Random(seed)
    people = list(assessors)
    rng.shuffle(people)
    order = list(query_ids)
    rng.shuffle(order)

    # Round-robin topk slots; slot s goes to assessor (s + s // L) mod m with L = lcm(a, m), i.e.
    # the pattern is shifted by one each time it would repeat, so the same assessors are not
    # always grouped on the same queries (which can make the graded side impossible to balance).
    period = math.lcm(a, m) if a else m
    topk: list[list[int]] = [
        [(s + s // period) % m for s in range(qi * a, qi * a + a)] for qi in range(n)
    ]
    t_load = [0] * m
    for chosen in topk:
        for p in chosen:
            t_load[p] += 1
    graded = _graded_by_flow(topk, t_load, m, b)

    picked: dict[str, dict[Method, list[str]]] = {
        q: {"topk": [people[p] for p in topk[qi]], "graded": [people[p] for p in graded[qi]]}
        for qi, q in enumerate(order)
    }
    position = {name: i for i, name in enumerate(assessors)}
    entries = [
        PlanEntry(name, q, meth, label)
        for q in query_ids
        for meth in METHODS
        for name in sorted(picked[q][meth], key=position.__getitem__)
    ]
    plan = Plan(tuple(entries), assessors, query_ids)
    hard = {"duplicate", "both_methods", "coverage", "excess"}
    errors = [v for v in validate_plan(plan, per_query=need) if v.code in hard]
    if errors:  # pragma: no cover - the construction guarantees these; kept as a safety net
        raise PlanError("; ".join(v.message for v in errors[:5]), errors)
    return plan


def _graded_by_flow(topk: list[list[int]], t_load: list[int], m: int, b: int) -> list[list[int]]:
    """Choose ``b`` graded assessors per query, none of them doing the query with topk.

    Max flow over source → queries → assessors → sink; see :func:`plan_balanced`.
    """
    n = len(topk)
    if b == 0 or n == 0:
        return [[] for _ in range(n)]
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    base, extra = divmod(n * b, m)
    # Every assessor takes ``base`` graded tasks; the ``extra`` ones go first to assessors with
    # fewer topk tasks (so totals differ by at most one). Two collector nodes enforce that split
    # exactly: with total flow m·base + extra every edge into the sink must be saturated.
    t_min = min(t_load)
    low = [p for p in range(m) if t_load[p] == t_min]
    extra_low = min(extra, len(low))
    extra_high = extra - extra_low
    source, sink, x_low, x_high = n + m, n + m + 1, n + m + 2, n + m + 3
    rows: list[int] = []
    cols: list[int] = []
    caps: list[int] = []
    for qi, excluded in enumerate(topk):
        rows.append(source)
        cols.append(qi)
        caps.append(b)
        banned = set(excluded)
        # Visit assessors starting at a query-dependent offset so ties spread evenly.
        for step in range(m):
            p = (qi + step) % m
            if p not in banned:
                rows.append(qi)
                cols.append(n + p)
                caps.append(1)
    sink_edge_start = len(caps)
    for p in range(m):
        rows.append(n + p)
        cols.append(sink)
        caps.append(base)
    for p in range(m):
        rows.append(n + p)
        cols.append(x_low if t_load[p] == t_min else x_high)
        caps.append(1)
    rows += [x_low, x_high]
    cols += [sink, sink]
    caps += [extra_low, extra_high]
    size = n + m + 4
    for _relax in range(n * b + 1):
        graph = csr_matrix(
            (np.asarray(caps, dtype=np.int32), (np.asarray(rows), np.asarray(cols))),
            shape=(size, size),
        )
        result = maximum_flow(graph, source, sink)
        if result.flow_value == n * b:
            flow = result.flow.tocoo()
            out: list[list[int]] = [[] for _ in range(n)]
            for r, c, f in zip(flow.row, flow.col, flow.data, strict=True):
                if f > 0 and r < n and n <= c < n + m:
                    out[int(r)].append(int(c) - n)
            return out
        # Not enough room with perfectly even targets: let every assessor take one more.
        for i in range(m):
            caps[sink_edge_start + i] += 1
    raise PlanError("could not place the graded assessors")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def validate_plan(
    plan: Plan,
    *,
    per_query: Mapping[str, int] | Mapping[Method, int] | None = None,
    require_both_tools: bool = True,
    check_balance: bool = True,
) -> list[Violation]:
    """Every violated constraint of ``plan`` (empty list = valid), errors before warnings.

    * ``per_query`` given: each query needs exactly that many assessors per method
      (``coverage`` below, ``excess`` above). Not given: at least one per method that the plan
      uses at all (requirement a).
    * (b): ``both_methods`` for an assessor with one query under both methods; ``duplicate`` for
      the same (assessor, query, method) twice.
    * (c): ``one_tool`` for an assessor without tasks of every method the plan uses (only with
      ``require_both_tools``; one-method plans are exempt). It is a warning when the plan has
      fewer tasks of that method than assessors, so (c) cannot hold at all.
    * ``unknown_*``: entries whose assessor/query is not in the plan's lists, or whose method is
      not ``topk``/``graded``.
    * ``unbalanced`` (warning): total or per-method loads differ by more than one.
    """
    out, seen = _entry_violations(plan)
    used_methods = sorted({e.method for e in plan.entries if e.method in METHODS})
    out += _coverage_violations(plan, seen, per_query, used_methods)
    load = plan.load()
    if require_both_tools and len(used_methods) > 1:
        out += _tool_violations(plan, load, used_methods)
    if check_balance and plan.assessors:
        out += _balance_violations(plan, load, used_methods)
    out.sort(key=lambda v: v.severity != "error")
    return out


def _entry_violations(plan: Plan) -> tuple[list[Violation], Counter[tuple[str, str, str]]]:
    """The unknown methods, assessors and queries, duplicates and (b) of ``plan``, and how
    often each (assessor, query, method) occurs."""
    out: list[Violation] = []
    known_a = set(plan.assessors)
    known_q = set(plan.query_ids)
    seen: Counter[tuple[str, str, str]] = Counter()
    methods_by_aq: dict[tuple[str, str], set[str]] = defaultdict(set)
    for e in plan.entries:
        if e.method not in METHODS:
            out.append(
                Violation(
                    "unknown_method",
                    f"unknown method {e.method!r} for {e.assessor} on query {e.query_id}",
                    assessor=e.assessor,
                    query_id=e.query_id,
                    method=e.method,
                )
            )
            continue
        if e.assessor not in known_a:
            out.append(
                Violation(
                    "unknown_assessor",
                    f"assessor {e.assessor!r} is not part of the study",
                    assessor=e.assessor,
                )
            )
        if e.query_id not in known_q:
            out.append(
                Violation(
                    "unknown_query",
                    f"query {e.query_id!r} is not part of the study",
                    query_id=e.query_id,
                )
            )
        seen[(e.assessor, e.query_id, e.method)] += 1
        methods_by_aq[(e.assessor, e.query_id)].add(e.method)
    for (a, q, meth), count in seen.items():
        if count > 1:
            out.append(
                Violation(
                    "duplicate",
                    f"{a} is assigned query {q} with {meth} {count} times",
                    assessor=a,
                    query_id=q,
                    method=meth,
                )
            )
    for (a, q), meths in methods_by_aq.items():
        if len(meths) > 1:
            out.append(
                Violation(
                    "both_methods",
                    f"{a} would see query {q} under both methods (requirement b)",
                    assessor=a,
                    query_id=q,
                )
            )
    return out, seen


def _coverage_violations(
    plan: Plan,
    seen: Counter[tuple[str, str, str]],
    per_query: Mapping[str, int] | Mapping[Method, int] | None,
    used_methods: Sequence[Method],
) -> list[Violation]:
    """(a): each query's assessors per method against ``per_query`` (or at least one per
    method the plan uses)."""
    out: list[Violation] = []
    counts: dict[tuple[str, str], set[str]] = defaultdict(set)
    for a, q, meth in seen:
        counts[(q, meth)].add(a)
    if per_query is not None:
        need = {m: int(per_query.get(m, 0)) for m in METHODS}
    else:
        need = {m: 1 for m in used_methods}
    for q in plan.query_ids:
        for meth, n_need in need.items():
            have = len(counts.get((q, meth), ()))
            if have < n_need:
                out.append(
                    Violation(
                        "coverage",
                        f"query {q} has {have} {meth} assessor(s), needs {n_need}"
                        + (" (requirement a)" if n_need == 1 and per_query is None else ""),
                        query_id=q,
                        method=meth,
                    )
                )
            elif per_query is not None and have > n_need:
                out.append(
                    Violation(
                        "excess",
                        f"query {q} has {have} {meth} assessor(s), the plan asks for {n_need}",
                        query_id=q,
                        method=meth,
                    )
                )
    return out


def _tool_violations(
    plan: Plan, load: dict[str, dict[str, int]], used_methods: Sequence[Method]
) -> list[Violation]:
    """(c): an assessor without tasks of every method the plan uses."""
    out: list[Violation] = []
    totals = Counter(e.method for e in plan.entries)
    # With fewer tasks of a method than assessors, (c) cannot hold: say so, as a warning.
    impossible = {m for m in used_methods if totals[m] < len(plan.assessors)}
    for a in plan.assessors:
        missing = [m for m in used_methods if load[a][m] == 0]
        if missing:
            cannot = [m for m in missing if m in impossible]
            note = (
                f" (impossible: only {', '.join(f'{totals[m]} {m}' for m in cannot)} "
                f"task(s) for {len(plan.assessors)} assessors)"
                if cannot
                else ""
            )
            out.append(
                Violation(
                    "one_tool",
                    f"{a} has no {' or '.join(missing)} task (requirement c: every assessor "
                    f"uses both tools){note}",
                    severity="warning" if len(cannot) == len(missing) else "error",
                    assessor=a,
                )
            )
    return out


def _balance_violations(
    plan: Plan, load: dict[str, dict[str, int]], used_methods: Sequence[Method]
) -> list[Violation]:
    """Warnings where total or per-method loads differ by more than one."""
    out: list[Violation] = []
    for key in ("total", *used_methods):
        values = [load[a][key] for a in plan.assessors]
        if max(values) - min(values) > 1:
            lo = min(plan.assessors, key=lambda a: load[a][key])
            hi = max(plan.assessors, key=lambda a: load[a][key])
            out.append(
                Violation(
                    "unbalanced",
                    f"{key} load ranges from {min(values)} ({lo}) to {max(values)} ({hi})",
                    severity="warning",
                    method=None if key == "total" else key,
                )
            )
    return out
