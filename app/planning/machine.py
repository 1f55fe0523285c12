"""The machine judge's pairwise accuracy the plan preview's figures with the machine assume
(docs/admin-guide.md#plan-preview), and where it comes from:

* ``given``: the plan's ``machine_accuracy``;
* ``measured``: what the collection's study calibration learns from: people's agreement with
  this source's raw opinions on the pairs people answered in the collection's tasks with a
  judge of the source (:func:`app.machine.service.people_agreement`, the calibration's window
  of recent answers), once there are at least :data:`MIN_MEASURED_PAIRS` of them. Those
  pairs are the ones the machine was not sure enough to answer and the audits, harder than
  random pairs, so the figure is a lower bound of its accuracy on random pairs: the
  preview's savings with it are conservative;
* ``none``: no measurement yet (fewer answers): the machine starts cold, and the preview
  gives a range, from a machine that earns nothing (the figures without it) to one of
  :data:`app.planning.cost.ASSUMED_MACHINE_ACCURACY` (0.8), the ``value`` here.

The simulation needs an accuracy in (1/2, 1]: a measured agreement at or below 1/2 is taken
as :data:`FLOOR` (a machine no better than a coin: it answers almost nothing).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.machine.service import people_agreement
from app.planning.cost import ASSUMED_MACHINE_ACCURACY

#: People's answers on the judge's pairs needed before the measured agreement is used.
MIN_MEASURED_PAIRS = 50
#: The lowest accuracy the simulation takes (just above a coin).
FLOOR = 0.51


@dataclass(frozen=True, slots=True)
class MachineAccuracy:
    """The accuracy the preview assumes: ``value``, ``source`` (given, measured, none) and
    the people's ``pairs`` it was (or would be) measured on."""

    value: float
    source: str
    pairs: int = 0

    @property
    def known(self) -> bool:
        """Whether the accuracy was measured or given (else a cold start: a range)."""
        return self.source != "none"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def preview_accuracy(
    db: Database, collection_id: int, source: str | None, given: float | None
) -> MachineAccuracy | None:
    """The accuracy for a plan whose top-k tasks have the machine ``source`` (None: no
    machine, no accuracy); module docstring."""
    if source is None:
        return None
    if given is not None:
        if not (0.5 < given <= 1.0):  # also NaN; 0.5 is a coin, which no Thurstone scale makes
            raise Invalid(f"machine_accuracy must be above 0.5 and at most 1, got {given}")
        return MachineAccuracy(float(given), "given")
    agree, pairs = people_agreement(db, collection_id, source)
    if pairs < MIN_MEASURED_PAIRS:
        return MachineAccuracy(ASSUMED_MACHINE_ACCURACY, "none", pairs)
    value = round(max(FLOOR, min(1.0, agree / pairs)), 3)
    return MachineAccuracy(value, "measured", pairs)
