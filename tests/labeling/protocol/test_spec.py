"""The task spec: its JSON round trip over generated specs, and the parser's refusals."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import ConfigError
from labeling.protocol.spec import (
    OPTION_NAMES,
    Bm25Source,
    EmbeddingSource,
    LlmSource,
    MachineSpec,
    ModelSource,
    Routing,
    TaskSpec,
    default_options,
    format_options,
    parse_machine,
    parse_source,
    parse_spec,
    validate_options,
)
from labeling.strategies.registry import (
    MODIFIERS,
    STRATEGIES,
    Strategy,
    parse_strategy,
    strategy_names,
)

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)


@st.composite
def strategies_(draw: st.DrawFn) -> Strategy:
    base = draw(st.sampled_from(list(STRATEGIES)))
    chosen = draw(st.lists(st.sampled_from(list(MODIFIERS)), unique=True))
    return Strategy(base, tuple(m for m in MODIFIERS if m in chosen))


SOURCES = st.one_of(
    st.just(Bm25Source()),
    st.just(EmbeddingSource()),
    st.builds(ModelSource, st.integers(1, 10**19 - 1)),
    st.builds(LlmSource, st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)),
)
MACHINES = st.builds(
    MachineSpec,
    SOURCES,
    st.none() | st.text(min_size=1, max_size=300),
    st.floats(0.0, 0.5, exclude_min=True),
)


@st.composite
def specs(draw: st.DrawFn) -> TaskSpec:
    k = draw(st.integers(1, 10**6))
    seed = draw(st.none() | st.integers(-(2**63), 2**63 - 1))
    if draw(st.booleans()):
        return TaskSpec(method="graded", k=k, seed=seed)
    strategy = draw(strategies_())
    order = draw(st.none() | st.lists(NAMES, unique=True, min_size=1, max_size=6).map(tuple))
    if order is None:
        prior = draw(st.sampled_from([None, "none"]))
    else:
        prior = draw(st.sampled_from([None, "bm25", "explicit", "feature:25", "run:tag", "llm"]))
    second = None
    if strategy.repeats:
        second = draw(st.none() | st.lists(NAMES, unique=True, min_size=1, max_size=3).map(tuple))
    return TaskSpec(
        method="topk",
        k=k,
        seed=seed,
        strategy=strategy,
        allow_ties=draw(st.booleans()),
        pair_cache=draw(st.booleans()),
        not_relevant=draw(st.booleans()),
        initial_order=order,
        reask_fraction=draw(st.floats(0.0, 0.5)),
        prior=prior,
        routing=Routing(second, draw(st.integers(60, 86_400))),
        machine=draw(MACHINES) if strategy.assisted and draw(st.booleans()) else None,
    )


@settings(max_examples=300, deadline=None)
@given(specs())
def test_parse_of_format_is_the_spec(spec: TaskSpec) -> None:
    options = format_options(spec)
    assert list(options) == list(OPTION_NAMES[spec.method])  # every option spelt out
    stored = json.loads(json.dumps(options))  # what the task row keeps
    assert parse_spec(spec.method, stored, k=spec.k, seed=spec.seed) == spec
    assert TaskSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert validate_options(spec.method, stored) == options  # idempotent on its own output


@given(strategies_())
def test_a_strategy_reads_back_from_its_name(strategy: Strategy) -> None:
    assert parse_strategy(strategy.name) == strategy
    assert strategy.name in strategy_names()
    assert strategy.assisted == ("assist" in strategy.name.split("+")[1:])
    assert strategy.repeats == ("robust" in strategy.name.split("+")[1:])


def test_every_listed_name_parses_to_its_base_and_modifiers() -> None:
    for name in strategy_names():
        base, *mods = name.split("+")
        assert parse_strategy(name) == Strategy(base, tuple(mods))
    # Every other order of the modifiers is refused, so each combination has one spelling.
    for base in STRATEGIES:
        for perm in itertools.permutations(MODIFIERS, 2):
            name = "+".join((base, *perm))
            if name not in strategy_names():
                with pytest.raises(ConfigError, match="option strategy must be one of"):
                    parse_strategy(name)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("bm25", Bm25Source()),
        ("embedding", EmbeddingSource()),
        ("model:12", ModelSource(12)),
        ("llm", LlmSource()),
        ("llm:default", LlmSource()),
        ("llm:judge-2", LlmSource("judge-2")),
    ],
)
def test_sources_read_from_their_text(text: str, source: object) -> None:
    assert parse_source(text) == source
    assert parse_source(source.text) == source  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text", ["", "BM25", "bm25:x", "model:", "model:0", "model:012", "model:x", "llm:", "gpt", 3]
)
def test_bad_sources_name_the_option(text: object) -> None:
    with pytest.raises(ConfigError, match=r"option machine\.source must be bm25"):
        parse_source(text)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"machine": {"source": "bm25", "max_loss": 0}}, r"option machine\.max_loss"),
        ({"machine": {"source": "bm25", "max_loss": 0.6}}, r"option machine\.max_loss"),
        ({"machine": {"source": "bm25", "max_loss": True}}, r"option machine\.max_loss"),
        ({"machine": {"source": "bm25", "max_loss": float("nan")}}, r"option machine\.max_loss"),
        ({"machine": {"source": "bm25", "gpu": 1}}, r"option machine\.gpu is not known"),
        ({"machine": {"source": "bm25", "judge": ""}}, r"option machine\.judge"),
        ({"machine": ["bm25"]}, "option machine must be null or an object"),
        ({"strategy": "heap", "machine": "bm25"}, "option machine answers"),
        ({"strategy": "heap", "second_assessor": "bob"}, "option second_assessor routes"),
        ({"second_opinion_timeout_s": 59}, "option second_opinion_timeout_s must be in"),
        ({"second_opinion_timeout_s": 60.0}, "option second_opinion_timeout_s must be a whole"),
        ({"reask_fraction": 0.51}, "option reask_fraction must be in"),
        ({"strategy": "heap+robust+robust"}, "option strategy must be one of"),
        ({"strategy": ["heap"]}, "option strategy must be one of"),
        ({"prior": "none", "initial_order": ["a"]}, "option prior is 'none'"),
        ({"not_relevant": "no"}, "option not_relevant must be true or false"),
        ({"bogus": 1, "also": 2}, r"unknown option\(s\) for topk: also, bogus"),
    ],
)
def test_bad_options_are_refused_by_name(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_spec("topk", options)


def test_k_seed_and_method_are_checked() -> None:
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        parse_spec("topk", {}, k=0)
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        parse_spec("topk", {}, k=True)
    with pytest.raises(ConfigError, match="seed must be an integer"):
        parse_spec("topk", {}, seed="7")
    with pytest.raises(ConfigError, match="unknown method"):
        parse_spec("pairs", {})
    with pytest.raises(ConfigError, match=r"unknown option\(s\) for graded: allow_ties"):
        TaskSpec(method="graded", allow_ties=True)
    with pytest.raises(ConfigError, match="unknown task field"):
        TaskSpec.from_json({"method": "topk", "docs": []})


def test_a_config_stored_before_an_option_parses_to_its_default() -> None:
    stored = {"allow_ties": True, "machine": {"source": "bm25", "judge": "bm25/k1=0.9"}}
    spec = parse_spec("topk", {**stored, "strategy": "heap+assist"})
    assert spec.machine == MachineSpec(Bm25Source(), "bm25/k1=0.9", 0.01)
    assert spec.routing == Routing(None, 600)
    assert spec.reask_fraction == 0.0
    assert parse_machine("model:7") == MachineSpec(ModelSource(7))
    assert default_options("graded") == {}
    assert default_options("topk") == format_options(TaskSpec())
