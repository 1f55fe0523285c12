"""How much a machine judge may be trusted, from people's answers: an upper confidence bound on
its probability of being wrong, and a sequential test of its audits
(docs/machine-judges.md#the-rule).

**The strata** (:func:`stratum`). A machine's raw P(first better) ``p`` names a side (first
when ``p > 1/2``) and falls in a confidence bin of ``c = |p − 1/2|``: the :data:`BIN_EDGES`
``0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.48, 0.49, 0.495, 0.499, 0.5`` (``c = 0`` names no side: never
an answer). A question also has a **stake**, the κ-NDCG@k its answer costs if wrong (the
assist rule's stake model), in a class of :data:`STAKE_EDGES` (0; up to 4⁻⁴, 4⁻³, 4⁻², 4⁻¹;
more). The stratum is the pair (bin, stake class). Why the stake: the questions a strategy
leaves to the machine (low stake) are not drawn like those people answer; a machine of
pairwise accuracy 0.8 was wrong on about half of its low-stake questions and on 3–36% of the
high-stake ones of the same bins (``insertion+assist``, docs/machine-judges.md#cold-start),
so a bound per bin learned from every human answer promised too much on what it answered.

**The bound** (:class:`StratumEvidence`). Per stratum, people's answers to questions of that
stratum (the study's earlier queries, this session's answers, the audits among them) count
``m`` answers of which ``w`` contradicted the machine's side. The machine's P(wrong) on a
question of that stratum is bounded by the one-sided **Clopper–Pearson** upper bound at level
:data:`BOUND_ALPHA` (C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial
limits illustrated in the case of the binomial", Biometrika 1934):

    U(w, m) = B⁻¹(1 − α; w + 1, m − w)   (the Beta quantile; U = 1 when w = m, so when m = 0)

so for any true error rate ``e`` of the stratum, ``P(U < e) ≤ α`` whatever ``m``: a machine
of true accuracy ``a`` is credited with an accuracy ``1 − U`` above ``a`` at most a share
``α`` of the time. The questions a machine answers and those people answer in one stratum are
chosen alike (by the same bin and stake class, the audit's hash, and the evidence so far,
never by the answer), so the bound holds on the answered questions as far as the machine's
error rate is the same across a stratum's questions. With no human answer the bound is 1 and
people answer (cold start); it narrows as answers accumulate (``w = 0``:
``U = 1 − α^{1/m}``, 0.095 after 30 answers). :class:`ErrorEvidence` keeps the same counts
per confidence bin alone (reports; the rule uses the strata).

**The audits** (:class:`AuditMonitor`). An audit is a question the machine would have
answered, claiming P(wrong) = ``U_i`` (its bound then), asked of a person. The monitor runs a
one-sided sequential probability ratio test (A. Wald, "Sequential tests of statistical
hypotheses", 1945) of H0: P(wrong) ≤ ``U_i`` against a mixture of two alternatives, each with
weight 1/2: P(wrong) = 1/2 (no better than a coin on the pairs it answers) and
P(wrong) = (1 + U_i)/2 (halfway from its claim to always wrong), without a lower boundary.
With ``x_i = 1`` when the audit contradicted the machine, each audit multiplies the
statistic by the mixture's likelihood ratio

    f_i(1) = ½·(1/2)/U_i + ½·(1 + U_i)/(2U_i),    f_i(0) = ½·(1/2)/(1 − U_i) + ½·(1/2),

whose mean under P(wrong) = U_i is 1 (and ≤ 1 below it), so ``Λ_t = Π f_i(x_i)`` is a
non-negative supermartingale under H0 and, by Ville's inequality,
``P(sup_t Λ_t ≥ 1/α) ≤ α``: the alarm (``Λ_t ≥ 1/``:data:`ALARM_ALPHA`) is raised by a
machine that keeps its claims with probability at most :data:`ALARM_ALPHA` over the whole
study, however many audits it sees. A machine wrong on every audit raises it after
``⌈ln(1/α) / ln f(1)⌉`` audits (2 at U = 0.05, 3 at U = 0.2, 10 at U = 0.45;
:func:`audits_to_alarm`).

**The audit share** (:func:`audit_share`): ``AUDIT_MAX · AUDIT_SCALE / (AUDIT_SCALE + m)``,
at least ``AUDIT_MIN``, ``m`` the human answers in the question's stratum: a fifth of the
questions the machine could answer while its stratum has no evidence, down to 2% once it has
about a hundred answers. It depends on the counts of answers, never on what they said.

Pure: the standard library, and scipy for the Beta quantile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "ALARM_ALPHA",
    "AUDIT_MAX",
    "AUDIT_MIN",
    "BIN_EDGES",
    "BOUND_ALPHA",
    "DEFAULT_MAX_LOSS",
    "MAX_MAX_LOSS",
    "N_STRATA",
    "STAKE_CLASSES",
    "STAKE_EDGES",
    "AuditMonitor",
    "ErrorEvidence",
    "StratumEvidence",
    "audit_share",
    "audits_to_alarm",
    "confidence_bin",
    "error_upper_bound",
    "question_tolerance",
    "stake_class",
    "stratum",
]

#: The expected κ-NDCG@k loss per query the machine's answers may cost (option
#: ``machine.max_loss``), by the stake model.
DEFAULT_MAX_LOSS = 0.01
#: Largest ``machine.max_loss`` (it must be > 0).
MAX_MAX_LOSS = 0.5
#: Level of the one-sided upper bound on a bin's error rate.
BOUND_ALPHA = 0.05
#: False-alarm rate of the audit test, over a whole study.
ALARM_ALPHA = 0.05
#: Edges of the confidence bins of ``|p − 1/2|`` (raw p): finer toward certainty, where a
#: judge's error rate falls by orders of magnitude (0.9 < p < 0.95 and p > 0.999 differ).
BIN_EDGES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.48, 0.49, 0.495, 0.499, 0.5)
#: The audit share: at most, at least, and the evidence at which it halves.
AUDIT_MAX = 0.2
AUDIT_MIN = 0.02
AUDIT_SCALE = 10.0
#: Per-question tolerance, times max_loss / n (:func:`question_tolerance`).
TOLERANCE_FACTOR = 35.0
#: Per-question tolerance, at most this share of max_loss (:func:`question_tolerance`).
TOLERANCE_SHARE = 0.2
#: Upper edges of the classes of a question's stake, the expected κ-NDCG@k it costs if the
#: machine's answer is wrong (:func:`stake_class`): stake 0, then up to 4⁻⁴, 4⁻³, 4⁻², 4⁻¹
#: (a factor 4 a class: the bound an answer needs, ``U ≤ τ/stake``, is the same within a
#: factor 4 in a class; finer classes split the evidence thinner), the last class unbounded.
#: Absolute, not relative to a task's tolerance, so tasks of other pool sizes or another
#: ``max_loss`` share the evidence.
STAKE_EDGES = (0.0, *(4.0**-j for j in range(4, 0, -1)))
STAKE_CLASSES = len(STAKE_EDGES) + 1
#: The strata of the bound: confidence bin × stake class (:func:`stratum`).
N_STRATA = (len(BIN_EDGES) - 1) * STAKE_CLASSES


def confidence_bin(p: float) -> int | None:
    """The bin of ``|p − 1/2|`` (0 … len(BIN_EDGES) − 2); None when ``p`` names no side (1/2,
    NaN, out of [0, 1])."""
    if not 0.0 <= p <= 1.0:  # NaN fails too
        return None
    c = abs(p - 0.5)
    if c == 0.0:
        return None
    for i in range(len(BIN_EDGES) - 2):
        if c <= BIN_EDGES[i + 1]:
            return i
    return len(BIN_EDGES) - 2


@lru_cache(maxsize=65536)
def error_upper_bound(wrong: int, answers: int, alpha: float = BOUND_ALPHA) -> float:
    """The one-sided Clopper–Pearson upper bound on an error rate, ``wrong`` of ``answers``
    (module docstring); 1 when every answer was wrong (none given included)."""
    if not 0 <= wrong <= answers:
        raise ValueError(f"need 0 <= wrong <= answers, got {wrong}, {answers}")
    if wrong == answers:
        return 1.0
    # Imported here: the protocol core loads this module for the option's default, and
    # scipy only where a machine is bounded.
    from scipy.special import betaincinv

    return float(betaincinv(wrong + 1, answers - wrong, 1.0 - alpha))


def stake_class(stake: float) -> int:
    """The class of a question's stake (:data:`STAKE_EDGES`): 0 when it is 0 (the pair cannot
    change the top k), else the first ``j`` with ``stake ≤ STAKE_EDGES[j]``, the last class
    (:data:`STAKE_CLASSES` − 1) above the last edge."""
    if stake <= 0.0:
        return 0
    for j in range(1, len(STAKE_EDGES)):
        if stake <= STAKE_EDGES[j]:
            return j
    return len(STAKE_EDGES)


def stratum(p: float, stake: float) -> int | None:
    """The stratum of a question (docs/machine-judges.md#the-rule): its confidence bin of the
    raw ``p`` times :data:`STAKE_CLASSES` plus its :func:`stake_class`; None when ``p`` names
    no side."""
    b = confidence_bin(p)
    if b is None:
        return None
    return b * STAKE_CLASSES + stake_class(stake)


def question_tolerance(max_loss: float, n: int) -> float:
    """The largest risk (stake × the bound) one machine answer may carry:
    ``max_loss · min(TOLERANCE_FACTOR / n, TOLERANCE_SHARE)`` (``max_loss · min(35 / n, 1/5)``)
    for a pool of ``n`` documents; the answers' risks together stay within ``max_loss``
    (docs/machine-judges.md#the-rule). The share 1/5 keeps one answer from spending most of
    the budget, so that it lasts for the many questions of small stake a strategy asks
    later."""
    return max_loss * min(TOLERANCE_FACTOR / max(n, 1), TOLERANCE_SHARE)


def audit_share(answers: int) -> float:
    """The share of a bin's would-be machine answers asked of people (module docstring)."""
    return max(AUDIT_MIN, AUDIT_MAX * AUDIT_SCALE / (AUDIT_SCALE + answers))


def _factor(claimed: float, wrong: bool) -> float:
    """One audit's likelihood ratio of the mixture alternative (module docstring)."""
    u = min(max(claimed, 1e-9), 1.0 - 1e-9)
    if wrong:
        return 0.5 * (0.5 / u) + 0.5 * (1.0 + u) / (2.0 * u)
    return 0.5 * (0.5 / (1.0 - u)) + 0.25


def audits_to_alarm(claimed: float, alpha: float = ALARM_ALPHA) -> int:
    """How many audits, all wrong, a machine claiming P(wrong) = ``claimed`` needs to raise
    the alarm."""
    return math.ceil(math.log(1.0 / alpha) / math.log(_factor(claimed, True)) - 1e-12)


@dataclass(slots=True)
class ErrorEvidence:
    """Per confidence bin: how many human answers, and how many contradicted the machine (the
    rule's bound is per stratum: :class:`StratumEvidence`)."""

    answers: list[int] = field(default_factory=lambda: [0] * (len(BIN_EDGES) - 1))
    wrong: list[int] = field(default_factory=lambda: [0] * (len(BIN_EDGES) - 1))

    @classmethod
    def of(cls, raw: Iterable[float], first_better: Iterable[float | bool]) -> ErrorEvidence:
        """Evidence from answers: the machine's raw P(first better) and whether people found
        the first better."""
        out = cls()
        for p, y in zip(raw, first_better, strict=True):
            out.add(float(p), bool(y))
        return out

    def copy(self) -> ErrorEvidence:
        """An independent copy."""
        return ErrorEvidence(list(self.answers), list(self.wrong))

    def add(self, p: float, first_better: bool) -> None:
        """One human answer on a pair the machine gave raw ``p``."""
        b = confidence_bin(p)
        if b is None:
            return
        self.answers[b] += 1
        self.wrong[b] += (p > 0.5) != first_better

    def count(self, p: float) -> int:
        """Human answers in the bin of ``p`` (0 when ``p`` names no side)."""
        b = confidence_bin(p)
        return 0 if b is None else self.answers[b]

    def upper(self, p: float) -> float:
        """Upper bound on P(the machine's side of ``p`` is wrong); 1 without a side."""
        b = confidence_bin(p)
        if b is None:
            return 1.0
        return error_upper_bound(self.wrong[b], self.answers[b])

    def to_dict(self) -> dict[str, list[int]]:
        """JSON-safe counts."""
        return {"answers": list(self.answers), "wrong": list(self.wrong)}


def _zeros() -> list[int]:
    return [0] * N_STRATA


@dataclass(slots=True)
class StratumEvidence:
    """Per stratum (:func:`stratum`: confidence bin × stake class): how many people's answers
    to questions of that stratum, and how many contradicted the machine's side. The bound of
    the assist rule (module docstring, "the strata")."""

    answers: list[int] = field(default_factory=_zeros)
    wrong: list[int] = field(default_factory=_zeros)

    @classmethod
    def of(cls, records: Iterable[tuple[int, bool]]) -> StratumEvidence:
        """Evidence from ``(stratum, the person contradicted the machine)`` records."""
        out = cls()
        for s, wrong in records:
            out.add(s, wrong)
        return out

    def copy(self) -> StratumEvidence:
        """An independent copy."""
        return StratumEvidence(list(self.answers), list(self.wrong))

    def add(self, s: int, wrong: bool) -> None:
        """One person's answer to a question of stratum ``s``."""
        if not 0 <= s < N_STRATA:
            raise ValueError(f"no stratum {s} (0 … {N_STRATA - 1})")
        self.answers[s] += 1
        self.wrong[s] += bool(wrong)

    def count(self, s: int | None) -> int:
        """Answers in stratum ``s`` (0 for None)."""
        return 0 if s is None else self.answers[s]

    def upper(self, s: int | None) -> float:
        """The Clopper–Pearson upper bound on the machine's P(wrong) in stratum ``s``; 1 for
        None."""
        return 1.0 if s is None else error_upper_bound(self.wrong[s], self.answers[s])

    def with_gold(self, gold: Iterable[tuple[float, bool]]) -> StratumEvidence:
        """A copy with the admin's gold pairs added (docs/machine-judges.md#the-gold-set): each
        ``(raw p, first better)`` counts as one answer, contradicting the machine when its side
        (first when ``p > 1/2``) is not the better one, in every stake class of its confidence
        bin. A gold pair has no stake of its own, so it is taken as representative of its bin's
        questions at every stake; the audits test that on the questions the machine answers,
        and the alarm stops a machine the gold set vouched for wrongly."""
        out = self.copy()
        for p, first_better in gold:
            b = confidence_bin(p)
            if b is None:
                continue
            wrong = (p > 0.5) != bool(first_better)
            for c in range(STAKE_CLASSES):
                out.add(b * STAKE_CLASSES + c, wrong)
        return out

    def to_dict(self) -> dict[str, list[int]]:
        """JSON-safe counts."""
        return {"answers": list(self.answers), "wrong": list(self.wrong)}


@dataclass(slots=True)
class AuditMonitor:
    """The sequential audit test (module docstring): ``log_ratio`` is ``ln Λ``; ``audits``
    and ``agree`` count the audits and those where the person agreed with the machine;
    ``claimed`` sums the claimed P(wrong)."""

    log_ratio: float = 0.0
    audits: int = 0
    agree: int = 0
    claimed: float = 0.0

    @property
    def alarmed(self) -> bool:
        """Whether the test has rejected H0 (the machine is worse than it claims)."""
        return self.log_ratio >= math.log(1.0 / ALARM_ALPHA) - 1e-12

    def record(self, claimed_wrong: float, wrong: bool) -> None:
        """One audit: the P(wrong) the machine claimed and whether the person contradicted
        it."""
        self.log_ratio += math.log(_factor(claimed_wrong, wrong))
        self.audits += 1
        self.agree += not wrong
        self.claimed += claimed_wrong

    def copy(self) -> AuditMonitor:
        """An independent copy."""
        return AuditMonitor(self.log_ratio, self.audits, self.agree, self.claimed)

    def to_dict(self) -> dict[str, Any]:
        """The evidence: audits, agreement, the mean claimed P(wrong), the statistic."""
        return {
            "audits": self.audits,
            "agree": self.agree,
            "agreement": self.agree / self.audits if self.audits else None,
            "claimed_wrong": self.claimed / self.audits if self.audits else None,
            "log_ratio": self.log_ratio,
            "threshold": math.log(1.0 / ALARM_ALPHA),
            "alarmed": self.alarmed,
        }
