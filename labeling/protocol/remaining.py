"""The remaining-work estimate a person reads ("about N left"): a strategy's model, smoothed
by one rule so that it never jumps (docs/protocols.md#the-remaining-estimate).

A strategy's model (``expected_remaining``) is a function of its state alone, so it can rise
after an answer (a heap's sift that went one level less deep than its mean puts the mean cost
of the next one back) or fall by more than half (a tournament replay that turned out short).
The estimate shown is a running value ``d`` over the log, updated after every entry (a
person's answer, a machine's, a broken document) from the model ``r`` and the worst-case
bound ``B`` (``max_remaining``) after that entry, and the bound ``B'`` before it:

* growth ``g = max(0, B − B')``: the plan grew when the worst case rose (a broken document
  restarting the strategy, a re-ask queued, a confirmation owed);
* ``high = min(B, d' + g)``: it never rises unless the plan grew, and then by at most the
  growth, and it never promises more than the protocol can still need;
* ``low = min(high, max(1, d'/2))``: it never falls below half of what was shown, unless the
  bound itself is lower (the protocol then proves it needs at most that);
* ``d = min(high, max(low, r))``, and ``0`` once done; the first value is ``r`` within
  ``[1, B]`` (the start-of-task model, unchanged).

So ``d`` follows the model whenever the model moves by less than these limits, and
converges to it geometrically (at most halving per entry) when the model drops below; it is
always within ``[1, B]`` while not done. It is a function of the log alone (the same on
replay), of each entry's content, not of who gave it (blind: the same with a machine on or
off for the same entries, docs/machine-judges.md#blind). Undo replays the shorter log, so it
shows the estimate of that prefix again, which may be higher.
"""

from __future__ import annotations


def first_estimate(model: float, bound: int, done: bool) -> float:
    """The estimate before any step of the rule: ``model`` within ``[1, bound]``, 0 when done."""
    if done:
        return 0.0
    return min(float(bound), max(1.0, model))


def next_estimate(shown: float, bound_before: int, model: float, bound: int, done: bool) -> float:
    """The estimate after one log entry (module docstring): ``shown`` and ``bound_before``
    before it, the strategy's ``model`` and the worst-case ``bound`` after it."""
    if done:
        return 0.0
    high = min(float(bound), shown + max(0, bound - bound_before))
    low = min(high, max(1.0, shown / 2.0))
    return min(high, max(low, model))
