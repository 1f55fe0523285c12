"""Domain errors of the labeling core.

Every error the protocols raise is a :class:`LabelingError` (a ``ValueError``), so callers
(the service, the CLI) can map the whole family in one place. A raised error never changes
the state of the session that raised it.
"""

from __future__ import annotations


class LabelingError(ValueError):
    """Base class of every domain error raised by :mod:`labeling`."""


class ConfigError(LabelingError):
    """The task configuration is invalid (k < 1, no documents, duplicate ids, ...)."""


class WrongQuestion(LabelingError):
    """The answer does not refer to the pending question (other pair, other document)."""


class InvalidAnswer(LabelingError):
    """The answer refers to the pending question but its value is not allowed
    (unknown outcome, a tie when ties are disabled, a grade outside 0..4, ...)."""


class Finished(LabelingError):
    """An answer was submitted to a session that has no pending question."""


class NotFinished(LabelingError):
    """A result was requested from a session that still has a pending question."""
