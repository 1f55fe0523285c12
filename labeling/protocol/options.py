"""The checks of a judging task's single values: the method, the documents, the seed and
each option that is more than a switch.

:mod:`labeling.protocol.spec` builds a task's :class:`~labeling.protocol.spec.TaskSpec` from
them (its parser names the option of a bad value). What each option does:
:mod:`labeling.protocol.topk` and docs/protocols.md#conventions-shared-by-every-strategy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard

from labeling.errors import ConfigError
from labeling.protocol.types import METHODS

#: Bounds of ``second_opinion_timeout_s`` (seconds): at least a minute, so a second assessor
#: who opens the question has time to answer it; at most a day, so a first assessor is never
#: kept waiting longer than that for a routed question.
MIN_SECOND_OPINION_TIMEOUT = 60
MAX_SECOND_OPINION_TIMEOUT = 86_400

#: Largest allowed ``reask_fraction``: at a half, re-asks already add 50% to the judgments
#: that build the ranking; more would measure the assessor rather than label the query.
MAX_REASK_FRACTION = 0.5


def check_method(method: object) -> str:
    """``method`` if it names a judging method (:data:`labeling.protocol.types.METHODS`), else
    ConfigError."""
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    return str(method)


def check_second_assessor(value: object) -> list[str] | None:
    """Option ``second_assessor``: None, or the usernames of the second assessors as a list
    (a single name is a list of one): distinct non-empty strings. Whether they exist is the
    service's check."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if isinstance(value, bytes) or not isinstance(value, Sequence) or not value:
        raise ConfigError(
            "option second_assessor must be null, a username or a non-empty list of usernames"
        )
    return _unique_ids(value, "second_assessor", "user {doc!r} is listed twice")


def check_second_opinion_timeout(value: object) -> int:
    """Option ``second_opinion_timeout_s``: whole seconds in [a minute, a day]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"option second_opinion_timeout_s must be a whole number of seconds, got {value!r}"
        )
    if not MIN_SECOND_OPINION_TIMEOUT <= value <= MAX_SECOND_OPINION_TIMEOUT:
        raise ConfigError(
            "option second_opinion_timeout_s must be in "
            f"[{MIN_SECOND_OPINION_TIMEOUT}, {MAX_SECOND_OPINION_TIMEOUT}], got {value!r}"
        )
    return value


def check_reask_fraction(value: object) -> float:
    """Option ``reask_fraction`` as a float in [0, :data:`MAX_REASK_FRACTION`]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"option reask_fraction must be a number in [0, 0.5], got {value!r}")
    if not (math.isfinite(value) and 0.0 <= value <= MAX_REASK_FRACTION):
        raise ConfigError(
            f"option reask_fraction must be in [0, {MAX_REASK_FRACTION}], got {value!r}"
        )
    return float(value)


def check_initial_order(value: object) -> list[str] | None:
    """Option ``initial_order``: None, or distinct non-empty document ids."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigError("option initial_order must be null or a list of document ids")
    return _unique_ids(value, "initial_order", "document {doc!r} is listed twice")


def check_doc_ids(doc_ids: object) -> list[str]:
    """A session's documents as a list: distinct non-empty strings, at least one; else
    ConfigError naming the first bad position."""
    if isinstance(doc_ids, str | bytes) or not isinstance(doc_ids, Sequence):
        raise ConfigError("doc_ids must be a list of document ids")
    if len(doc_ids) == 0:
        raise ConfigError("a session needs at least one document (doc_ids is empty)")
    return _unique_ids(doc_ids, "doc_ids", "duplicate document id {doc!r}")


def _unique_ids(ids: Sequence[object], name: str, duplicate: str) -> list[str]:
    """``ids`` as a list if they are distinct non-empty strings; else ConfigError naming the
    first bad position (``name[pos]``), with ``duplicate`` formatted for a repeated id."""
    # Fast path (replay runs on every request); the loop below only locates the error.
    try:
        unique = set(ids)
    except TypeError:  # an unhashable entry (a list from JSON, ...): the loop names it
        unique = set()
    if _distinct_names(ids, unique):
        return list(ids)
    checked: list[str] = []
    seen: set[str] = set()
    for pos, doc in enumerate(ids):
        if not isinstance(doc, str) or not doc:
            raise ConfigError(f"{name}[{pos}] must be a non-empty string, got {doc!r}")
        if doc in seen:
            raise ConfigError(f"{name}[{pos}]: " + duplicate.format(doc=doc))
        seen.add(doc)
        checked.append(doc)
    return checked  # not reached: the fast path accepts ids that pass every check


def _distinct_names(ids: Sequence[object], unique: set[object]) -> TypeGuard[Sequence[str]]:
    """True when ``unique`` (the set of ``ids``) shows distinct, non-empty strings."""
    return len(unique) == len(ids) and set(map(type, unique)) <= {str} and "" not in unique


def check_seed(seed: object) -> int:
    """``seed`` if it is an integer (not a bool), else ConfigError."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    return seed
