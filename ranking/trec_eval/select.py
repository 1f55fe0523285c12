"""Which measures a command line asks for, and their parameters (``mark_measure`` and the
``init_meas`` procedures of trec_eval 10.0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ranking.trec_eval import params as pp
from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.registry import MEASURES, NICKNAMES, Measure, by_name

__all__ = ["Requested", "select"]


@dataclass(frozen=True)
class Requested:
    """A measure to compute, with its parameters and the names of its values."""

    measure: Measure
    params: Any
    names: tuple[str, ...]


def _mark(arg: str, marked: set[str], args: list[tuple[str, str]]) -> None:
    name, dot, param = arg.partition(".")
    if dot:
        if not param:
            print(
                f"trec_eval: improper measure in parameter '{name}'", file=__import__("sys").stderr
            )
            raise TrecEvalError(f"trec_eval: illegal measure '{name}'", 1)
        args.append((name, param))
    if name in NICKNAMES:
        marked.update(NICKNAMES[name])
        return
    if by_name(name) is None:
        raise TrecEvalError(f"trec_eval: illegal measure '{arg}'", 1)
    marked.add(name)


def _init(measure: Measure, given: str | None) -> Requested:
    kind, name = measure.kind, measure.name
    if kind == "cut_long":
        cutoffs = pp.long_cutoffs(given) if given else list(measure.default)
        return Requested(measure, cutoffs, tuple(pp.cut_names(name, cutoffs)))
    if kind == "cut_double":
        points = pp.double_cutoffs(given) if given else [float(x) for x in measure.default]
        return Requested(measure, points, tuple(pp.cut_names(name, points)))
    if kind in {"p_double", "relstring"}:
        values = pp.double_params(given) if given else list(measure.default)
        return Requested(measure, values, (f"{name}_{given}" if given else name,))
    if kind == "p_pair":
        pairs = pp.pair_params(given) if given else []
        return Requested(measure, pairs, (f"{name}_{given}" if given else name,))
    if kind == "runid":
        return Requested(measure, None, ())
    return Requested(measure, None, (name,))


def select(measure_args: list[str]) -> list[Requested]:
    """The requested measures in trec_eval's output order (``official`` when none)."""
    marked: set[str] = set()
    args: list[tuple[str, str]] = []
    for arg in measure_args or ["official"]:
        _mark(arg, marked, args)
    requested: list[Requested] = []
    for measure in MEASURES:
        if measure.name not in marked:
            continue
        given = next((param for name, param in args if name == measure.name), None)
        try:
            requested.append(_init(measure, given))
        except TrecEvalError as error:
            raise TrecEvalError(
                f"{error.message}\ntrec_eval: Cannot initialize measure '{measure.name}'", 2
            ) from None
    return requested
