"""
```python
opts = validate_options("topk", {"allow_ties": True})
s = open_session("topk", doc_ids, k=10, seed=7, options=opts, answers=log)
s.pending        # PairQuestion(seq, left, right) | GradeQuestion(seq, doc_id) | None
s.submit(PairAnswer(q.left, q.right, "left"))
s.progress()     # Progress(judgments, expected_remaining, max_remaining, done)
s.result()       # TopKResult | GradedResult
```

The judgment log is the only state (docs/protocols.md): undo is ``open_session(..., answers[:-1])``.

The two methods: :class:`labeling.protocol.topk.TopKSession` (tool T1, a pairwise strategy
with the conventions of docs/protocols.md) and :class:`labeling.protocol.graded.GradedSession`
(tool T2, five grades).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

from labeling.errors import ConfigError, LabelingError, WrongQuestion
from labeling.protocol.graded import GradedSession
from labeling.protocol.options import check_doc_ids, check_method, check_seed
from labeling.protocol.spec import validate_options
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import LogEntry, MachineAnswer
from labeling.strategies.assist import Machine

AnySession = TopKSession | GradedSession


@overload
def open_session(
    method: Literal["topk"],
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[LogEntry] = (),
    machine: Machine | None = None,
) -> TopKSession: ...


@overload
def open_session(
    method: Literal["graded"],
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[LogEntry] = (),
    machine: Machine | None = None,
) -> GradedSession: ...


@overload
def open_session(
    method: str,
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[LogEntry] = (),
    machine: Machine | None = None,
) -> AnySession: ...


def open_session(
    method: str,
    doc_ids: Sequence[str],
    *,
    k: int = 10,
    seed: int,
    options: Mapping[str, Any] | None = None,
    answers: Sequence[LogEntry] = (),
    machine: Machine | None = None,
) -> AnySession:
    """Rebuild a session from its config and replay ``answers`` in order.

    Raises :class:`ConfigError` for a bad config and, if the log does not replay, the
    :class:`LabelingError` of the first answer that does not fit (its index in the message).
    ``machine``: the judge a ``+assist`` strategy may let answer (ignored by others); replay
    takes the log's machine answers as given and never asks it: call
    :meth:`TopKSession.let_machine_answer` to let it answer from the log's end on.
    """
    method = check_method(method)
    opts = validate_options(method, options)
    ids = check_doc_ids(doc_ids)
    seed = check_seed(seed)
    session: AnySession
    if method == "topk":
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {k!r}")
        session = TopKSession(ids, k=k, seed=seed, options=opts, machine=machine)
    else:
        session = GradedSession(ids, seed=seed)
    replay(session, answers)
    return session


def replay(session: AnySession, answers: Sequence[LogEntry]) -> AnySession:
    """Submit ``answers`` in order; a failure names the answer index."""
    for index, answer in enumerate(answers):
        try:
            if isinstance(session, TopKSession):
                session.submit(answer)
            elif isinstance(answer, MachineAnswer):
                raise WrongQuestion("a five-grade task has no machine answers")
            else:
                session.submit(answer)
        except LabelingError as err:
            raise type(err)(f"answer {index} does not replay: {err}") from err
    return session
