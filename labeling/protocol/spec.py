"""A task's specification as one typed, immutable value, and its JSON form.

:class:`TaskSpec` is what every path that makes, shows, replays or exports a task passes
around: the method, k, the seed, the strategy (:class:`labeling.strategies.registry.Strategy`:
a base and its modifiers), the order and its prior, the machine (:class:`MachineSpec`, whose
source is one of :class:`Bm25Source`, :class:`ModelSource`, :class:`LlmSource`), the routing
of repeats (:class:`Routing`) and the protocol's switches. A task row stores its options as
JSON (``task.options``); :func:`parse_spec` reads that JSON (and a request's) into the value,
naming the option of any unknown key or bad value (ConfigError), and :func:`format_options`
writes the value back, every option spelt out:
``parse_spec(s.method, format_options(s), k=s.k, seed=s.seed) == s`` for every spec ``s``
(tests/labeling/protocol/test_spec.py). A stored config missing an option added later parses
to that option's default, so old tasks replay unchanged. What each option does:
docs/protocols.md#conventions-shared-by-every-strategy and docs/architecture.md#the-task-spec.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from labeling.errors import ConfigError
from labeling.protocol.options import (
    check_initial_order,
    check_method,
    check_reask_fraction,
    check_second_assessor,
    check_second_opinion_timeout,
    check_seed,
)
from labeling.protocol.prior_orders import check_prior, check_prior_matches_order
from labeling.protocol.types import Method
from labeling.strategies.assist import DEFAULT_MAX_LOSS, MAX_MAX_LOSS
from labeling.strategies.registry import Strategy, parse_strategy

#: A task's k when a caller gives none.
DEFAULT_K = 10
#: Default ``second_opinion_timeout_s``: ten minutes before a routed question goes back.
DEFAULT_SECOND_OPINION_TIMEOUT = 600
#: The LLM endpoint of ``llm`` (the service's configured one).
DEFAULT_LLM_ENDPOINT = "default"

#: The options of each method, in the order they are written.
OPTION_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "topk": (
        "allow_ties",
        "pair_cache",
        "not_relevant",
        "initial_order",
        "reask_fraction",
        "strategy",
        "prior",
        "second_assessor",
        "second_opinion_timeout_s",
        "machine",
    ),
    "graded": (),
}
#: Keys of option ``machine``: ``source`` (given), ``judge`` (the judge's version, recorded
#: by the service when it prepares the task's opinions) and ``max_loss``.
MACHINE_KEYS: Final = ("source", "judge", "max_loss")
_FLAGS: Final = ("allow_ties", "pair_cache", "not_relevant")
_ENDPOINT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SOURCE_FORMS = "bm25, embedding, model:<training run id> or llm[:<endpoint>]"
#: Largest training run id (what a 64-bit signed key holds, with room).
_MAX_RUN_ID = 10**19 - 1


# --------------------------------------------------------------------------- machine sources


@dataclass(frozen=True, slots=True)
class Bm25Source:
    """The collection's BM25: a raw score per document."""

    @property
    def text(self) -> str:
        return "bm25"


@dataclass(frozen=True, slots=True)
class EmbeddingSource:
    """BM25 and the packaged word embedding, standardised and summed
    (docs/machine-judges.md#the-embedding-judge): a raw score per document."""

    @property
    def text(self) -> str:
        return "embedding"


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A finished training run's model over the documents' feature vectors."""

    run_id: int

    def __post_init__(self) -> None:
        if isinstance(self.run_id, bool) or not 1 <= self.run_id <= _MAX_RUN_ID:
            raise ConfigError(f"a training run id is a positive integer, got {self.run_id!r}")

    @property
    def text(self) -> str:
        return f"model:{self.run_id}"


@dataclass(frozen=True, slots=True)
class LlmSource:
    """An LLM endpoint of the service, by name (``default``: the configured one)."""

    endpoint: str = DEFAULT_LLM_ENDPOINT

    def __post_init__(self) -> None:
        if not _ENDPOINT.match(self.endpoint):
            raise ConfigError(
                f"an LLM endpoint name is 1..64 letters, digits, '_', '.', '-'; "
                f"got {self.endpoint!r}"
            )

    @property
    def text(self) -> str:
        if self.endpoint == DEFAULT_LLM_ENDPOINT:
            return "llm"
        return f"llm:{self.endpoint}"


MachineSource = Bm25Source | EmbeddingSource | ModelSource | LlmSource


def parse_source(text: object, name: str = "option machine.source") -> MachineSource:
    """The source a text names: ``bm25``, ``embedding``, ``model:<training run id>`` (no
    leading zero), ``llm`` or ``llm:<endpoint>``; ConfigError starting with ``name``
    otherwise. Inverse of :attr:`text` (``llm:default`` reads as ``llm``)."""
    if isinstance(text, str):
        kind, sep, detail = text.partition(":")
        if kind == "bm25" and not sep:
            return Bm25Source()
        if kind == "embedding" and not sep:
            return EmbeddingSource()
        if kind == "llm":
            if not sep:
                return LlmSource()
            if _ENDPOINT.match(detail):
                return LlmSource(detail)
        if (
            kind == "model"
            and detail.isascii()
            and detail.isdigit()
            and detail[0] != "0"
            and int(detail) <= _MAX_RUN_ID
        ):
            return ModelSource(int(detail))
    raise ConfigError(f"{name} must be {_SOURCE_FORMS}, got {text!r}")


@dataclass(frozen=True, slots=True)
class MachineSpec:
    """Option ``machine`` of a ``+assist`` task: its judge's source, the judge's version once
    the service has prepared the task (``judge``), and ``max_loss``, the expected κ-NDCG@k
    loss per query the machine's answers may cost (in (0, 0.5])."""

    source: MachineSource
    judge: str | None = None
    max_loss: float = DEFAULT_MAX_LOSS

    def __post_init__(self) -> None:
        _check_max_loss(self.max_loss)
        if self.judge is not None and (
            not isinstance(self.judge, str) or not self.judge or len(self.judge) > 300
        ):
            raise ConfigError("option machine.judge must be a judge version (a short text)")


@dataclass(frozen=True, slots=True)
class Routing:
    """Where a ``+robust`` task's deliberate repeats go
    (docs/noise.md#routing-re-asks-to-a-second-assessor): the second assessors' usernames
    (None: the task's own assessor) and how long a routed question waits for them. The
    protocol never reads it; replay ignores it."""

    second_assessor: tuple[str, ...] | None = None
    timeout_s: int = DEFAULT_SECOND_OPINION_TIMEOUT

    def __post_init__(self) -> None:
        check_second_opinion_timeout(self.timeout_s)
        if self.second_assessor is not None:
            check_second_assessor(list(self.second_assessor))


# --------------------------------------------------------------------------- the task spec


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """Everything a task's protocol is replayed from, but its documents and its log.

    ``seed`` None: not drawn yet (the service draws one when it creates the task).
    ``initial_order`` and ``prior``: the order the documents come in and where it came from
    (None: a task stored before the option, or an order given without its source). The
    options of a five-grade task keep their defaults (it has none)."""

    method: Method = "topk"
    k: int = DEFAULT_K
    seed: int | None = None
    strategy: Strategy = field(default_factory=Strategy)
    allow_ties: bool = False
    pair_cache: bool = True
    not_relevant: bool = False
    initial_order: tuple[str, ...] | None = None
    reask_fraction: float = 0.0
    prior: str | None = None
    routing: Routing = field(default_factory=Routing)
    machine: MachineSpec | None = None

    def __post_init__(self) -> None:
        check_method(self.method)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {self.k!r}")
        if self.seed is not None:
            check_seed(self.seed)
        if self.method == "graded":
            changed = [n for n in OPTION_NAMES["topk"] if _option(self, n) != _TOPK_DEFAULTS[n]]
            if changed:
                raise ConfigError(
                    f"unknown option(s) for graded: {', '.join(changed)} (known: none)"
                )
            return
        self._check_combinations()

    def _check_combinations(self) -> None:
        """ConfigError for top-k options that do not go together."""
        if self.prior is not None:
            check_prior_matches_order(self.prior, self.initial_order)
        name = self.strategy.name
        if self.routing.second_assessor is not None and not self.strategy.repeats:
            raise ConfigError(
                "option second_assessor routes a strategy's repeated comparisons; strategy "
                f"{name!r} repeats none (use a +robust strategy, e.g. tournament+robust)"
            )
        if self.machine is not None and not self.strategy.assisted:
            raise ConfigError(
                "option machine answers the questions of a +assist strategy; strategy "
                f"{name!r} asks people everything (use e.g. insertion+assist)"
            )

    def options(self) -> dict[str, Any]:
        """The options as stored with the task (:func:`format_options`)."""
        return format_options(self)

    def to_json(self) -> dict[str, Any]:
        """The whole spec as JSON: ``method``, ``k``, ``seed`` and ``options``
        (:meth:`from_json` reads it back)."""
        return {"method": self.method, "k": self.k, "seed": self.seed, "options": self.options()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskSpec:
        """The spec :meth:`to_json` wrote (also a request's ``method, k, seed, options``)."""
        unknown = sorted(set(data) - {"method", "k", "seed", "options"})
        if unknown:
            raise ConfigError(f"unknown task field(s): {', '.join(unknown)}")
        return parse_spec(
            data.get("method", "topk"),
            data.get("options"),
            k=data.get("k", DEFAULT_K),
            seed=data.get("seed"),
        )


def _option(spec: TaskSpec, name: str) -> object:
    """The JSON value of one option of ``spec``."""
    if name == "strategy":
        return spec.strategy.name
    if name == "initial_order":
        return None if spec.initial_order is None else list(spec.initial_order)
    if name == "second_assessor":
        chosen = spec.routing.second_assessor
        return None if chosen is None else list(chosen)
    if name == "second_opinion_timeout_s":
        return spec.routing.timeout_s
    if name == "machine":
        return None if spec.machine is None else _format_machine(spec.machine)
    return getattr(spec, name)


_TOPK_DEFAULTS: Final[dict[str, object]] = {
    "allow_ties": False,
    "pair_cache": True,
    "not_relevant": False,
    "initial_order": None,
    "reask_fraction": 0.0,
    "strategy": "heap",
    "prior": None,
    "second_assessor": None,
    "second_opinion_timeout_s": DEFAULT_SECOND_OPINION_TIMEOUT,
    "machine": None,
}


def format_options(spec: TaskSpec) -> dict[str, Any]:
    """The options of ``spec`` as JSON, every option of its method spelt out (inverse of
    :func:`parse_spec`)."""
    return {name: _option(spec, name) for name in OPTION_NAMES[spec.method]}


def default_options(method: str) -> dict[str, Any]:
    """The options of a ``method`` task that names none."""
    return format_options(TaskSpec(method=check_method(method)))  # type: ignore[arg-type]


def _format_machine(machine: MachineSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"source": machine.source.text}
    if machine.judge is not None:
        out["judge"] = machine.judge
    out["max_loss"] = machine.max_loss
    return out


def parse_spec(
    method: object,
    options: Mapping[str, Any] | None = None,
    *,
    k: object = DEFAULT_K,
    seed: object = None,
) -> TaskSpec:
    """The :class:`TaskSpec` of a task's JSON (a stored config or a request); ConfigError
    naming the option of an unknown key or a bad value, or the options that do not go
    together. Options the config lacks take their defaults."""
    checked = check_method(method)
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"options must be a mapping, got {type(options).__name__}")
    names = OPTION_NAMES[checked]
    unknown = sorted(str(key) for key in options if key not in names)
    if unknown:
        known = ", ".join(names) or "none"
        raise ConfigError(f"unknown option(s) for {checked}: {', '.join(unknown)} (known: {known})")
    if isinstance(k, bool) or not isinstance(k, int):
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    fields: dict[str, Any] = {}
    for key, value in options.items():
        if key in _FLAGS:
            if not isinstance(value, bool):
                raise ConfigError(f"option {key} must be true or false, got {value!r}")
            fields[key] = value
        elif key == "initial_order":
            order = check_initial_order(value)
            fields[key] = None if order is None else tuple(order)
        elif key == "reask_fraction":
            fields[key] = check_reask_fraction(value)
        elif key == "strategy":
            fields[key] = parse_strategy(value)
        elif key == "prior":
            fields[key] = check_prior(value)
        elif key == "machine":
            fields[key] = parse_machine(value)
    fields["routing"] = parse_routing(options)
    return TaskSpec(
        method=checked,  # type: ignore[arg-type]
        k=k,
        seed=None if seed is None else check_seed(seed),
        **fields,
    )


def parse_routing(options: Mapping[str, Any]) -> Routing:
    """The routing options of a task's options (the rest unread); ConfigError naming a bad
    one."""
    chosen = check_second_assessor(options.get("second_assessor"))
    timeout = options.get("second_opinion_timeout_s", DEFAULT_SECOND_OPINION_TIMEOUT)
    return Routing(None if chosen is None else tuple(chosen), check_second_opinion_timeout(timeout))


def parse_machine(value: object) -> MachineSpec | None:
    """Option ``machine``: null, a source's text (``"bm25"``) or an object with ``source``
    and optionally ``judge`` and ``max_loss``; ConfigError naming the key otherwise. Whether
    the source can judge the collection (the training run exists and is done, the endpoint
    is configured) is the service's check."""
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
    return MachineSpec(
        parse_source(value.get("source")),
        value.get("judge"),
        _check_max_loss(value.get("max_loss", DEFAULT_MAX_LOSS)),
    )


def _check_max_loss(value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and 0.0 < value <= MAX_MAX_LOSS)
    ):
        raise ConfigError(f"option machine.max_loss must be a number in (0, 0.5], got {value!r}")
    return float(value)


def validate_options(method: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The complete options of ``method`` (defaults filled in) as JSON: ``format_options(
    parse_spec(method, options))``; ConfigError on bad input. Idempotent, and a config missing
    options added later validates to the same result as one that spells their defaults out."""
    return format_options(parse_spec(method, options))
