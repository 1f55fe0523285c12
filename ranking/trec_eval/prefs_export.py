"""Pairwise preferences as trec_eval ``prefs`` lines, for an export of judgments.

A **judgment group** (trec_eval's ``jg``) is one consistent set of preferences about one
query. heapjudge's proposal: one task (one assessor's judgments on one query) is one group —
an assessor's answers are meant to be consistent with each other, two assessors may
disagree, and trec_eval's per-group measures (``prefs_avgjg``) then weigh every assessor
equally, however many pairs each judged. Each pairwise answer "``winner`` over ``loser``"
becomes a sub-group (``jsg``) of two lines, the winner at rel_level 2 and the loser at 1.
Levels 2 and 1, not 1 and 0: trec_eval reads rel_level 0 as "non-relevant" and refuses a
document that is 0 in one sub-group and above 0 in another of the same group, which a
document that loses one comparison and wins another would be.

trec_eval closes each group's preferences under transitivity and aborts on a cycle (A over
B, B over C, C over A in one group); :func:`prefs_lines` refuses such a group with the
cycle named, before any line is written. Ties are not preferences and are left out.

Real judging is not always consistent: the same assessor re-asked a pair may answer the other
way, and a chain of answers may close a cycle. :func:`separate_contradictions` keeps such an
answer without breaking its group: an answer whose loser the group's earlier answers already
prefer to its winner (directly or by transitivity) becomes a judgment group of its own, as
trec_eval's documentation has it for "the same user at different times" (``formats.c``:
"Different JGs may contain contradictory preferences"). trec_eval then counts it as one more
preference (``prefs_simp``), and ``prefs_pair`` weighs the two opinions of the pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Preference", "PreferenceCycleError", "prefs_lines", "separate_contradictions"]


@dataclass(frozen=True)
class Preference:
    """``winner`` preferred to ``loser`` for ``query`` within judgment group ``group``."""

    query: str
    winner: str
    loser: str
    group: str


class PreferenceCycleError(ValueError):
    """A judgment group whose preferences contain a cycle (trec_eval would abort on it)."""


def _check_field(value: str, what: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} is empty or has whitespace; trec_eval fields cannot")


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether ``goal`` is reachable from ``start`` along ``edges`` (``start`` itself counts)."""
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for nxt in edges.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def separate_contradictions(
    preferences: Iterable[Preference], *, suffix: str = "c"
) -> list[Preference]:
    """The preferences in order, each group kept consistent: an answer "``w`` over ``l``"
    whose group already prefers ``l`` to ``w`` (an earlier answer ``l > w``, or a chain
    ``l > … > w``) is moved to a group of its own, ``<group>.<suffix><n>`` for the group's
    n-th such answer, so :func:`prefs_lines` never meets a cycle. A group without a
    contradiction is returned unchanged; the answers that are moved keep their order."""
    edges: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    moved: dict[tuple[str, str], int] = defaultdict(int)
    out: list[Preference] = []
    for pref in preferences:
        key = (pref.query, pref.group)
        graph = edges[key]
        if _reaches(graph, pref.loser, pref.winner):
            moved[key] += 1
            group = f"{pref.group}.{suffix}{moved[key]}"
            out.append(Preference(pref.query, pref.winner, pref.loser, group))
            continue
        graph[pref.winner].add(pref.loser)
        out.append(pref)
    return out


def prefs_lines(preferences: Iterable[Preference]) -> list[str]:
    """``qid jg jsg docno rel_level`` lines (no newline), grouped by query and group in the
    order first seen; raises :class:`PreferenceCycleError` for an inconsistent group and
    ValueError for a field trec_eval cannot read (empty, or with whitespace)."""
    groups: dict[tuple[str, str], list[Preference]] = defaultdict(list)
    for pref in preferences:
        for value, what in (
            (pref.query, "query"),
            (pref.winner, "document"),
            (pref.loser, "document"),
            (pref.group, "group"),
        ):
            _check_field(value, what)
        if pref.winner == pref.loser:
            raise ValueError(f"a document cannot be preferred to itself: {pref.winner!r}")
        groups[(pref.query, pref.group)].append(pref)
    lines: list[str] = []
    for (query, group), prefs in groups.items():
        edges: dict[str, set[str]] = defaultdict(set)
        for pref in prefs:
            edges[pref.winner].add(pref.loser)
        cycle = _find_cycle(edges)
        if cycle:
            raise PreferenceCycleError(
                f"query {query!r}, group {group!r}: preferences form a cycle {' > '.join(cycle)}"
            )
        for n, pref in enumerate(prefs, start=1):
            lines.append(f"{query} {group} {n} {pref.winner} 2")
            lines.append(f"{query} {group} {n} {pref.loser} 1")
    return lines
