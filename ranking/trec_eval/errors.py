"""The one error of the trec_eval drop-in: a message and trec_eval's exit status."""

from __future__ import annotations

__all__ = ["TrecEvalError"]


class TrecEvalError(Exception):
    """Input or usage trec_eval would refuse (or that heapjudge refuses where trec_eval is
    silent): ``message`` goes to standard error and the process exits with ``status``
    (trec_eval's own codes: 1 usage, 2 unreadable or malformed input, 4 a query that cannot
    be evaluated)."""

    def __init__(self, message: str, status: int = 2, lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        #: Output lines trec_eval prints before it stops (``-q`` lines of earlier queries).
        self.lines = lines or []
