"""The options of a judging task: their defaults and their validation.

:func:`validate_options` fills in the defaults of a method and checks every value; it runs on
every replay (:func:`labeling.protocol.session.open_session`), so a config stored before an
option existed replays unchanged. What each option does: :mod:`labeling.protocol.topk` and
docs/protocols.md#conventions-shared-by-every-strategy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from labeling.errors import ConfigError
from labeling.protocol.prior_orders import check_prior, check_prior_matches_order
from labeling.protocol.types import METHODS
from labeling.strategies.assist import DEFAULT_MAX_LOSS, MAX_MAX_LOSS
from labeling.strategies.registry import DEFAULT_STRATEGY, check_strategy_name, makes_repeats

#: Options of each method and their defaults (all recorded in the task config).
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "topk": {
        "allow_ties": False,
        "pair_cache": True,
        "not_relevant": False,
        "initial_order": None,
        "reask_fraction": 0.0,
        "strategy": DEFAULT_STRATEGY,
        "prior": None,
        "second_assessor": None,
        "second_opinion_timeout_s": 600,
        "machine": None,
    },
    "graded": {},
}

#: Options the protocol never reads: where the service routes a strategy's deliberate repeats
#: (docs/noise.md#routing-re-asks-to-a-second-assessor). Recorded with the config like every
#: option, so a task's routing is part of what was assigned; replay ignores them.
ROUTING_OPTIONS = ("second_assessor", "second_opinion_timeout_s")

#: Options the protocol never reads either: the machine judge a ``+assist`` strategy may let
#: answer (docs/machine-judges.md#the-service). The service builds the machine from it and
#: passes it to the session; a logged machine answer replays without it.
MACHINE_OPTIONS = ("machine",)
#: The judge sources of option ``machine``: ``bm25``, ``model:<training run id>``, ``llm``.
MACHINE_SOURCE = re.compile(r"^(?:bm25|llm|model:[1-9][0-9]{0,18})$")
#: Keys of option ``machine``: ``source`` (given), ``judge`` (the judge's version, recorded
#: by the service when it prepares the task's opinions) and ``max_loss`` (the expected
#: κ-NDCG@k loss per query the machine may cost, docs/machine-judges.md#the-rule).
MACHINE_KEYS = ("source", "judge", "max_loss")


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


def validate_options(method: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the complete options of ``method`` (defaults filled in); ConfigError on bad input.

    Idempotent: ``validate_options(m, validate_options(m, o)) == validate_options(m, o)``, and
    a config missing options added later (``reask_fraction``) validates to the same result as
    one that spells their defaults out.
    """
    method = check_method(method)
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"options must be a mapping, got {type(options).__name__}")
    defaults = DEFAULT_OPTIONS[method]
    unknown = sorted(str(key) for key in options if key not in defaults)
    if unknown:
        known = ", ".join(defaults) or "none"
        raise ConfigError(f"unknown option(s) for {method}: {', '.join(unknown)} (known: {known})")
    out = dict(defaults)
    for key, value in options.items():
        if key == "initial_order":
            out[key] = _check_initial_order(value)
        elif key == "reask_fraction":
            out[key] = _check_reask_fraction(value)
        elif key == "strategy":
            out[key] = check_strategy_name(value)
        elif key == "prior":
            out[key] = check_prior(value)
        elif key == "second_assessor":
            out[key] = _check_second_assessor(value)
        elif key == "second_opinion_timeout_s":
            out[key] = _check_second_opinion_timeout(value)
        elif key == "machine":
            out[key] = check_machine(value)
        else:
            if not isinstance(value, bool):
                raise ConfigError(f"option {key} must be true or false, got {value!r}")
            out[key] = value
    if method == "topk":
        _check_topk_combinations(out)
    return out


def _check_topk_combinations(out: Mapping[str, Any]) -> None:
    """ConfigError for top-k options that do not go together."""
    if out["prior"] is not None:
        check_prior_matches_order(out["prior"], out["initial_order"])
    if out["second_assessor"] is not None and not makes_repeats(out["strategy"]):
        raise ConfigError(
            "option second_assessor routes a strategy's repeated comparisons; strategy "
            f"{out['strategy']!r} repeats none (use a +robust strategy, e.g. tournament+robust)"
        )
    if out["machine"] is not None and not is_assisted(out["strategy"]):
        raise ConfigError(
            "option machine answers the questions of a +assist strategy; strategy "
            f"{out['strategy']!r} asks people everything (use e.g. insertion+assist)"
        )


def is_assisted(strategy: str) -> bool:
    """Whether the strategy name carries the ``assist`` modifier."""
    return "assist" in strategy.split("+")[1:]


def check_machine(value: object) -> dict[str, Any] | None:
    """None, or option ``machine`` as a dict: ``source`` one of ``bm25``, ``model:<training
    run id>``, ``llm``; ``max_loss`` a number in (0, 0.5] (default :data:`DEFAULT_MAX_LOSS`,
    recorded) and, once the service has prepared the task, ``judge`` (the judge's version);
    ConfigError naming the key otherwise. Whether the training run exists and is done is the
    service's check."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"source": value}
    if not isinstance(value, Mapping):
        raise ConfigError('option machine must be null or an object such as {"source": "bm25"}')
    unknown = sorted(str(k) for k in value if k not in MACHINE_KEYS)
    if unknown:
        raise ConfigError(
            f"option machine.{unknown[0]} is not known (known: {', '.join(MACHINE_KEYS)})"
        )
    source = value.get("source")
    if not isinstance(source, str) or not MACHINE_SOURCE.match(source):
        raise ConfigError(
            f"option machine.source must be bm25, model:<training run id> or llm, got {source!r}"
        )
    out: dict[str, Any] = {"source": source, "max_loss": _check_max_loss(value.get("max_loss"))}
    judge = value.get("judge")
    if judge is not None:
        if not isinstance(judge, str) or not judge or len(judge) > 300:
            raise ConfigError("option machine.judge must be a judge version (a short text)")
        out["judge"] = judge
    return out


def _check_max_loss(value: object) -> float:
    if value is None:
        return DEFAULT_MAX_LOSS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"option machine.max_loss must be a number in (0, 0.5], got {value!r}")
    if not (math.isfinite(value) and 0.0 < value <= MAX_MAX_LOSS):
        raise ConfigError(f"option machine.max_loss must be in (0, {MAX_MAX_LOSS}], got {value!r}")
    return float(value)


def _check_second_assessor(value: object) -> list[str] | None:
    """None, or the usernames of the second assessors as a list (a single name is a list of
    one): distinct non-empty strings. Whether they exist is the service's check."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if isinstance(value, bytes) or not isinstance(value, Sequence) or not value:
        raise ConfigError(
            "option second_assessor must be null, a username or a non-empty list of usernames"
        )
    return _unique_ids(value, "second_assessor", "user {doc!r} is listed twice")


def _check_second_opinion_timeout(value: object) -> int:
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


def _check_reask_fraction(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"option reask_fraction must be a number in [0, 0.5], got {value!r}")
    if not (math.isfinite(value) and 0.0 <= value <= MAX_REASK_FRACTION):
        raise ConfigError(
            f"option reask_fraction must be in [0, {MAX_REASK_FRACTION}], got {value!r}"
        )
    return float(value)


def _check_initial_order(value: object) -> list[str] | None:
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
