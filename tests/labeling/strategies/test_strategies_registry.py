"""The strategy registry and the ``strategy`` option of top-k tasks."""

from __future__ import annotations

import math

import pytest

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.strategies import registry
from labeling.strategies.heap import HeapTopK
from labeling.strategies.registry import (
    STRATEGIES,
    lower_bound,
    makes_repeats,
    resolve_strategy,
    strategy_names,
)
from labeling.study.simulation import Assessor, run_session

DOCS = [f"d{i}" for i in range(12)]
SCORES = {d: float((7 * i) % 12) for i, d in enumerate(DOCS)}


def brute_lower_bound(n: int, k: int) -> int:
    """The same sum written from its definition, term by term, with floating-point log2."""
    k = min(k, n)
    return n - k + sum(math.ceil(math.log2(j) - 1e-12) for j in range(n - k + 2, n + 1))


def test_lower_bound_at_the_three_reference_sizes():
    assert (lower_bound(50, 10), lower_bound(100, 10), lower_bound(200, 20)) == (94, 153, 332)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 17, 64, 65])
def test_lower_bound_matches_its_definition_and_edge_cases(n):
    for k in range(1, n + 3):
        assert lower_bound(n, k) == brute_lower_bound(n, k)
    assert lower_bound(n, 1) == n - 1  # finding the maximum
    assert lower_bound(n, n + 5) == lower_bound(n, n)  # k >= n: sort all n


def test_lower_bound_rejects_empty_sizes():
    with pytest.raises(ConfigError):
        lower_bound(0, 3)


def test_default_strategy_is_the_heap_and_old_configs_replay_unchanged():
    assert validate_options("topk", {})["strategy"] == "heap"
    stored_before_the_option = {"allow_ties": False, "pair_cache": True}
    opts = validate_options("topk", stored_before_the_option)
    assert opts == validate_options("topk", {**stored_before_the_option, "strategy": "heap"})
    assert validate_options("topk", opts) == opts  # idempotent
    s = open_session("topk", DOCS, k=4, seed=3, options=stored_before_the_option)
    assert type(s.state) is HeapTopK


def test_every_registered_name_is_accepted_and_listed():
    assert next(iter(STRATEGIES)) == "heap"
    for name in STRATEGIES:
        assert name in strategy_names()
        assert validate_options("topk", {"strategy": name})["strategy"] == name
        assert resolve_strategy(name) is STRATEGIES[name]


@pytest.mark.parametrize("bad", ["Heap", "heap+", "+heap", "quick", "", None, 3, ["heap"]])
def test_unknown_strategy_is_a_config_error_listing_the_names(bad):
    with pytest.raises(ConfigError) as err:
        validate_options("topk", {"strategy": bad})
    message = str(err.value)
    assert "option strategy" in message and repr(bad) in message
    for name in strategy_names():
        assert name in message


def test_graded_tasks_have_no_strategy_option():
    with pytest.raises(ConfigError, match="unknown option"):
        validate_options("graded", {"strategy": "heap"})


def _modifier(tag: str):
    def modify(cls):
        return type(
            f"{cls.__name__}_{tag}",
            (cls,),
            {"modified_by": (*getattr(cls, "modified_by", ()), tag)},
        )

    return modify


@pytest.fixture()
def two_modifiers(monkeypatch):
    monkeypatch.setattr(registry, "_resolved", {})
    # A fresh dict in place of the registered modifiers (assist, robust): deleting and
    # restoring keys one by one would put them back in another order, and the order is the
    # spelling of every name.
    modifiers = {"first": _modifier("first"), "second": _modifier("second")}
    monkeypatch.setattr(registry, "MODIFIERS", modifiers)
    return modifiers


def test_modifier_names_combine_in_registration_order(two_modifiers):
    names = strategy_names()
    bases = list(STRATEGIES)
    expected = []
    for base in bases:
        expected += [base, f"{base}+first", f"{base}+second", f"{base}+first+second"]
    assert names == expected
    assert "heap+second+first" not in names and "heap+first+first" not in names
    with pytest.raises(ConfigError, match="heap\\+first\\+second"):
        validate_options("topk", {"strategy": "heap+second+first"})


def test_a_modified_strategy_runs_in_the_session(two_modifiers):
    cls = resolve_strategy("heap+first+second")
    # Applied right to left: the first named is the outermost (applied last).
    assert issubclass(cls, HeapTopK) and cls.modified_by == ("second", "first")
    assert resolve_strategy("heap+first+second") is cls  # built once per name
    opts = validate_options("topk", {"strategy": "heap+second"})
    s = open_session("topk", DOCS, k=4, seed=5, options=opts)
    assert s.state.modified_by == ("second",)
    run = run_session(s, Assessor(SCORES, seed=0))
    assert run.result.top == sorted(DOCS, key=lambda d: -SCORES[d])[:4]


def test_modifier_names_vanish_with_the_modifier(two_modifiers, monkeypatch):
    assert "heap+first" in strategy_names()
    monkeypatch.delitem(two_modifiers, "first")
    assert "heap+first" not in strategy_names()
    with pytest.raises(ConfigError):
        resolve_strategy("heap+first")


def test_makes_repeats_names_the_strategies_with_a_repeating_modifier():
    """The service routes deliberate repeats to a second assessor only for these names
    (option second_assessor); every name with +robust repeats, no base strategy does."""
    for name in strategy_names():
        assert makes_repeats(name) == ("robust" in name.split("+")[1:]), name
    with pytest.raises(ConfigError, match="repeats none"):
        validate_options("topk", {"strategy": "heap", "second_assessor": "bob"})
    assert validate_options("topk", {"strategy": "heap+robust", "second_assessor": "bob"})[
        "second_assessor"
    ] == ["bob"]
