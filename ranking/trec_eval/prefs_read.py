"""Preference judgments for trec_eval's ``-R prefs`` and ``-R qrels_prefs``, and the judgment
groups of ``-R qrels_jg``.

- ``prefs`` lines: ``qid jg jsg docno rel_level``. Within one judgment group (jg: one
  consistent set of preferences, for instance one assessor's on one query), a judgment
  sub-group (jsg) states that every document of a higher ``rel_level`` is preferred to every
  document of a lower one; a group with several sub-groups is a partial order, closed under
  transitivity (trec_eval's ``formats.c``). ``rel_level`` 0 marks non-relevant documents.
- ``qrels_prefs`` lines: ``qid jg docno rel_level``, one sub-group per group (graded qrels,
  the iteration column read as the group).
- ``qrels_jg`` lines: ``qid jg docno rel``, one ordinary qrels per judgment group.
"""

from __future__ import annotations

from dataclasses import dataclass

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.readers import c_atof, is_decimal, read_bytes, split_lines

__all__ = ["PrefRow", "read_prefs"]


@dataclass(frozen=True)
class PrefRow:
    qid: bytes
    jg: bytes
    jsg: bytes
    doc: bytes
    rel_level: float


def read_prefs(path: str, *, qrels_style: bool, lenient: bool = False) -> list[PrefRow]:
    """Rows of a ``prefs`` file (5 fields) or, with ``qrels_style``, of a ``qrels_prefs``
    file (4 fields, sub-group ``0``)."""
    data = read_bytes(path, "prefs")
    width = 4 if qrels_style else 5
    shape = "'qid jg docno rel_level'" if qrels_style else "'qid jg jsg docno rel_level'"
    rows: list[PrefRow] = []
    for number, fields in split_lines(data, skip_blank=False):
        if len(fields) != width:
            text = b" ".join(fields).decode("utf-8", "replace")
            raise TrecEvalError(f"{path}:{number}: expected {width} fields {shape}, got '{text}'")
        level_text = fields[-1]
        if not is_decimal(level_text) and not lenient:
            raise TrecEvalError(
                f"{path}:{number}: expected a number rel_level in field {width}, "
                f"got '{level_text.decode('utf-8', 'replace')}'"
            )
        level = float(level_text) if is_decimal(level_text) else c_atof(level_text)
        jsg = b"0" if qrels_style else fields[2]
        rows.append(PrefRow(fields[0], fields[1], jsg, fields[-2], level))
    if not rows:
        raise TrecEvalError(f"trec_eval: Cannot read prefs file '{path}': no preferences")
    return rows
