"""Prior orders of a top-k task: the order in which a strategy first meets the documents.

A prior is resolved ONCE, when a task is created, into the top-k option ``initial_order``
(best first); the option ``prior`` records where that order came from, so that replay stays a
pure function of ``(task config, log)`` and exports and the analysis can say which prior a
task used. The recorded value is a *prior spec*, a string ``source`` or ``source:detail``:

* ``none`` — no prior: the documents come in the seeded shuffle (``initial_order`` is null);
* ``bm25`` — the collection's BM25 ranking for the query (``docs/retrieval.md``);
* ``feature:<i>`` — a LETOR feature column of the documents, descending; ``i`` is the feature
  number as written in the LETOR file (1-based, e.g. ``feature:25``, BM25 of the whole
  document in LETOR 4.0);
* ``run`` or ``run:<tag>`` — an uploaded TREC run's ranking of the query (the tag of its
  sixth column when the run names one);
* ``model:<id>`` — a machine judge: the scores of a finished training run's model over the
  documents' feature vectors, descending (``docs/machine-judges.md#judges-as-priors``);
* ``llm`` — a machine judge: an LLM's grade (0..4, the graded prompt template) of each
  document, descending;
* ``explicit`` — an ``initial_order`` given as it is (e.g. by a REST client that ranked the
  documents itself).

Which documents a strategy shows first is the strategy's business (the heap builds from the
first k, insertion inserts in order, ...); the left/right side of every question stays a
seeded hash either way (``docs/strategies-in-practice.md#priors``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labeling.errors import ConfigError

#: The prior sources a task may name, in the order the forms offer them.
PRIOR_SOURCES: tuple[str, ...] = ("none", "bm25", "feature", "run", "model", "llm", "explicit")
#: The prior of a task that names none.
NO_PRIOR = "none"
#: Longest accepted detail (a feature number or a run tag).
MAX_DETAIL = 100


def parse_prior(spec: object) -> tuple[str, str | None]:
    """``(source, detail)`` of a prior spec (``"feature:25"`` → ``("feature", "25")``);
    ConfigError naming the accepted forms otherwise. Feature numbers are canonicalised
    (``"feature:025"`` → ``"25"``)."""
    forms = "none, bm25, feature:<number>, run, run:<tag>, model:<training run id>, llm or explicit"
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"prior must be one of {forms}; got {spec!r}")
    source, sep, detail = spec.partition(":")
    if source not in PRIOR_SOURCES:
        raise ConfigError(f"unknown prior {spec!r}; expected {forms}")
    if source == "feature":
        if not detail.isdigit() or int(detail) < 1:
            raise ConfigError(
                f"prior {spec!r}: give the LETOR feature number, 1-based as in the file "
                "(e.g. feature:25)"
            )
        return source, str(int(detail))
    if source == "model":
        if not detail.isdigit() or int(detail) < 1:
            raise ConfigError(
                f"prior {spec!r}: give the id of a finished training run (e.g. model:12)"
            )
        return source, str(int(detail))
    if source == "run" and sep:
        if not detail or len(detail) > MAX_DETAIL or any(c.isspace() for c in detail):
            raise ConfigError(f"prior {spec!r}: a run tag is 1..{MAX_DETAIL} non-blank characters")
        return source, detail
    if sep:
        raise ConfigError(f"prior {source!r} takes no ':' detail; got {spec!r}")
    return source, None


def prior_spec(source: str, detail: str | None = None) -> str:
    """The canonical spec of ``(source, detail)`` (inverse of :func:`parse_prior`)."""
    return source if detail is None else f"{source}:{detail}"


def check_prior(value: object) -> str | None:
    """The option ``prior`` as stored: ``None`` (a task created before the option, or by a
    caller that gave ``initial_order`` only) or a canonical prior spec."""
    if value is None:
        return None
    return prior_spec(*parse_prior(value))


def check_prior_matches_order(prior: str | None, initial_order: object) -> None:
    """A recorded prior and ``initial_order`` must agree: ``none`` has no order, every other
    source has one. (``prior = None`` says nothing and goes with either.)"""
    if prior is None:
        return
    if prior == NO_PRIOR and initial_order is not None:
        raise ConfigError("option prior is 'none' but initial_order is set; drop one of them")
    if prior != NO_PRIOR and initial_order is None:
        raise ConfigError(f"option prior is {prior!r} but initial_order is null")


def feature_order(
    doc_ids: Sequence[str], features: Mapping[str, Sequence[float] | None], number: int
) -> list[str]:
    """``doc_ids`` by LETOR feature ``number`` (1-based) descending, equal values by document id
    (so the order never depends on the import order, which may follow the labels).

    ConfigError naming the first document without a vector or with fewer features."""
    if number < 1:
        raise ConfigError(f"feature numbers start at 1, got {number}")
    value: dict[str, float] = {}
    for doc in doc_ids:
        vector = features.get(doc)
        if vector is None:
            missing = sum(1 for d in doc_ids if features.get(d) is None)
            raise ConfigError(
                f"feature:{number}: {missing} of {len(doc_ids)} documents have no feature "
                f"vector (first: {doc!r}); attach the LETOR features first"
            )
        if len(vector) < number:
            raise ConfigError(f"feature:{number}: document {doc!r} has only {len(vector)} features")
        value[doc] = float(vector[number - 1])
    return sorted(doc_ids, key=lambda d: (-value[d], d))


def score_order(doc_ids: Sequence[str], scores: Mapping[str, float]) -> list[str]:
    """The documents of ``doc_ids`` that have a score, by score descending, equal scores by
    document id (as :func:`feature_order`); those without one are left out (the session
    appends them in seeded order)."""
    scored = [d for d in dict.fromkeys(doc_ids) if d in scores]
    return sorted(scored, key=lambda d: (-scores[d], d))


def ranking_order(doc_ids: Sequence[str], ranking: Sequence[str]) -> list[str]:
    """The documents of ``doc_ids`` in ``ranking`` order (best first); those the ranking does
    not list are left out (the session appends them in seeded order)."""
    pool = set(doc_ids)
    return [d for d in dict.fromkeys(ranking) if d in pool]
