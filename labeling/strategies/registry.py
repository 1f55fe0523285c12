"""The judging-strategy registry: which pairwise strategies a top-k task may name.

A task's option ``strategy`` names one entry of :data:`STRATEGIES`, optionally followed by
modifiers from :data:`MODIFIERS` joined with ``+`` (``"heap"``, ``"tournament+robust"``).
:func:`strategy_names` lists every accepted name; :func:`parse_strategy` turns a name into a
:class:`Strategy` value (a base and its modifiers), :func:`resolve_strategy` a name into
the class :class:`labeling.protocol.topk.TopKSession` instantiates. A modifier is a function from a
strategy class to a strategy class (e.g. one that re-asks some comparisons); a name lists them
in registration order, each at most once, so that every combination has exactly one spelling
in a stored task config, and they are applied right to left: the first named is the
outermost (``tournament+assist+robust`` is ``assist(robust(tournament))``: the machine
answers questions of the robust tournament).

Conventions of each strategy: ``docs/protocols.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from labeling.errors import ConfigError
from labeling.strategies.assist import assist
from labeling.strategies.base import PairStrategy
from labeling.strategies.heap import HeapTopK
from labeling.strategies.insertion import InsertionTopK
from labeling.strategies.prior_tournament import PriorTournamentTopK
from labeling.strategies.robust import robust
from labeling.strategies.tournament import TournamentTopK

#: Base strategies by option name: ``heap`` (Algorithm 1 of Niu et al., SIGIR 2012, "Top-k
#: Learning to Rank: Labeling, Ranking and Evaluation"; the default), ``tournament``
#: (replacement selection, the fewest judgments on random orders) and ``insertion`` (binary
#: insertion into a sorted top list) and ``prior`` (a tournament shaped by the order, the
#: fewest when documents come in a good prior order; docs/protocols.md#prior).
STRATEGIES: dict[str, type[PairStrategy]] = {
    "heap": HeapTopK,
    "tournament": TournamentTopK,
    "insertion": InsertionTopK,
    "prior": PriorTournamentTopK,
}

#: Strategy modifiers by name: ``MODIFIERS[m](cls)`` is ``cls`` changed by ``m``.
MODIFIERS: dict[str, Callable[[type[PairStrategy]], type[PairStrategy]]] = {
    # A machine answers the questions whose risk (stake × probability wrong) is small, people
    # the rest (docs/machine-judges.md#assisted-strategies).
    "assist": assist,
    # Re-ask the comparisons the result depends on, by what a wrong answer would cost, and
    # combine the answers (docs/noise.md#the-robust-rule; tournament+robust meets the cost
    # goal under 10% flips).
    "robust": robust,
}

#: The modifiers that ask deliberate repeats of a pair (:attr:`Compare.repeat`): the questions
#: the service may route to a second assessor (docs/noise.md#routing-re-asks-to-a-second-assessor).
REPEATING_MODIFIERS = frozenset({"robust"})

#: The strategy of a task whose options do not name one (every task stored before the option).
DEFAULT_STRATEGY = "heap"

#: Separates a base strategy from its modifiers in a name.
SEPARATOR = "+"
#: The modifier that lets a machine judge answer (docs/machine-judges.md#assisted-strategies).
ASSIST = "assist"

# Resolved names -> (the modifier functions used, the class); a modifier builds a new class on
# every call, and a session is rebuilt on every request, so the class is built once per name.
_resolved: dict[str, tuple[tuple[Callable[..., object], ...], type[PairStrategy]]] = {}


def strategy_names() -> list[str]:
    """Every name the ``strategy`` option accepts: each base strategy in registration order,
    each followed by its combinations with the modifiers (non-empty subsets, in registration
    order; with one modifier ``m``: ``heap``, ``heap+m``, ``tournament``, ...)."""
    modifiers = list(MODIFIERS)
    names: list[str] = []
    for base in STRATEGIES:
        names.append(base)
        for size in range(1, len(modifiers) + 1):
            for combo in itertools.combinations(modifiers, size):
                names.append(SEPARATOR.join((base, *combo)))
    return names


@dataclass(frozen=True, slots=True)
class Strategy:
    """A strategy as a value: its base (a key of :data:`STRATEGIES`) and its modifiers (keys
    of :data:`MODIFIERS`, in registration order, each at most once). :func:`parse_strategy`
    reads the name people type (``tournament+assist+robust``); :attr:`name` writes it back.
    Built directly, it is checked the same way (ConfigError naming option ``strategy``)."""

    base: str = "heap"
    modifiers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        order = list(MODIFIERS)
        ranks = [order.index(m) if m in MODIFIERS else -1 for m in self.modifiers]
        canonical = -1 not in ranks and ranks == sorted(set(ranks))
        if self.base not in STRATEGIES or not canonical:
            names = strategy_names()
            raise ConfigError(
                f"option strategy must be one of {', '.join(names)}; got {self.name!r}"
            )

    @property
    def name(self) -> str:
        """The name as stored in a task's options: ``base+modifier+...``."""
        return SEPARATOR.join((self.base, *self.modifiers))

    @property
    def assisted(self) -> bool:
        """Whether a machine may answer its questions (the ``assist`` modifier)."""
        return ASSIST in self.modifiers

    @property
    def repeats(self) -> bool:
        """Whether it asks deliberate repeats (a modifier in :data:`REPEATING_MODIFIERS`)."""
        return any(m in REPEATING_MODIFIERS for m in self.modifiers)

    def without(self, modifier: str) -> Strategy:
        """This strategy without ``modifier`` (itself if it has none)."""
        return Strategy(self.base, tuple(m for m in self.modifiers if m != modifier))

    def with_base(self, base: str) -> Strategy:
        """The same modifiers on another base strategy."""
        return Strategy(base, self.modifiers)


def parse_strategy(name: object) -> Strategy:
    """The :class:`Strategy` a name stands for (``tournament+robust`` -> base ``tournament``,
    modifiers ``("robust",)``); ConfigError listing the accepted names for any other value,
    including a known base with its modifiers out of registration order."""
    if not isinstance(name, str):
        raise ConfigError(
            f"option strategy must be one of {', '.join(strategy_names())}; got {name!r}"
        )
    base, *modifiers = name.split(SEPARATOR)
    if "" in modifiers or not base:
        raise ConfigError(
            f"option strategy must be one of {', '.join(strategy_names())}; got {name!r}"
        )
    return Strategy(base, tuple(modifiers))


def check_strategy_name(name: object) -> str:
    """``name`` if :func:`strategy_names` lists it; else ConfigError listing the accepted names."""
    return parse_strategy(name).name


def makes_repeats(name: str) -> bool:
    """Whether the strategy ``name`` asks deliberate repeats (:attr:`Strategy.repeats`)."""
    return parse_strategy(name).repeats


def resolve_strategy(name: str | Strategy) -> type[PairStrategy]:
    """The strategy class a name stands for (modifiers applied right to left); ConfigError for
    a name :func:`strategy_names` does not list."""
    if isinstance(name, str):
        base = STRATEGIES.get(name)
        if base is not None:
            return base
    strategy = name if isinstance(name, Strategy) else parse_strategy(name)
    functions = tuple(MODIFIERS[m] for m in strategy.modifiers)
    cached = _resolved.get(strategy.name)
    if cached is not None and cached[0] == functions:
        return cached[1]
    cls = STRATEGIES[strategy.base]
    for modify in reversed(functions):
        cls = modify(cls)
    _resolved[strategy.name] = (functions, cls)
    return cls


def lower_bound(n: int, k: int) -> int:
    """Kislitsyn's worst-case lower bound on comparisons to find the k best of n, in order:

        L(n, k) = n − k + Σ_{j = n−k+2}^{n} ⌈log2 j⌉

    (Kislitsyn 1964; Knuth, *The Art of Computer Programming* vol. 3, §5.3.3). 94 at
    (50, 10), 153 at (100, 10), 332 at (200, 20). For ``k ≥ n`` the task is sorting all n
    (k = n), so ``k`` is capped at ``n``; ``L(n, n) = Σ_{j=2}^{n} ⌈log2 j⌉``, the binary-insertion
    count, which is also the bound for ``k = n − 1``.
    """
    if n < 1 or k < 1:
        raise ConfigError(f"n and k must be >= 1, got n={n}, k={k}")
    k = min(k, n)
    return n - k + sum((j - 1).bit_length() for j in range(n - k + 2, n + 1))
