"""Types of the compiled join of trec_eval (``ranking/trec_eval/_rankjoin.c``;
ranking.trec_eval.fast_merge)."""

from typing import TypeAlias

#: rank()'s answer: the joined columns (the C source's docstring), or why it declined.
RankResult: TypeAlias = (
    tuple[
        list[str],
        bytearray,
        int,
        bytearray,
        bytearray,
        int,
        bytearray,
        dict[int, bytes],
        dict[int, bytes],
        int,
        str,
    ]
    | str
)

def rank(
    qrels_path: str,
    run_path: str,
    max_ret: int,
    judged_only: bool,
    complete: bool,
    block_size: int = ...,
    /,
) -> RankResult: ...
def query_lines(
    qids: list[str], columns: list[tuple[str, int, object]], start: int, stop: int, /
) -> str | None: ...
def judged_measures(
    rel: object, num_ret: object, num_rel: object, num_nonrel: object, level: int, /
) -> bytearray: ...
def graded_measures(
    gains: object, ideal: object, n_ideal: object, num_ret: object, num_rel: object, disc: object, /
) -> bytearray: ...
def ndcg_cuts(
    gains: object, ideal: object, n_ideal: object, num_ret: object, disc: object, cutoffs: object, /
) -> bytearray: ...
def integer_grades(path: str, /) -> bool: ...
def iprec_at_recall(rel: object, num_ret: object, level: int, targets: object, /) -> bytearray: ...
def rbp(
    rel: object,
    num_ret: object,
    num_rel_levels: object,
    table: object,
    low: int,
    param_listed: object,
    rescale: object,
    low_q: object,
    high_q: object,
    powers: object,
    p: float,
    /,
) -> bytearray: ...
def rbp_resid(rel: object, num_ret: object, powers: object, p: float, /) -> bytearray: ...
def gain_rows(rel: object, num_ret: object, table: object, low: int, /) -> bytearray: ...
def ideal_rows(
    rel_levels: object, grades: int, levels: object, values: object, width: int, /
) -> tuple[bytearray, bytearray, int]: ...
def ap_sums(rel: object, num_ret: object, level: int, /) -> bytearray: ...
def log_floor(values: object, floor: float, /) -> bytearray: ...
