"""Types of the compiled TREC scan (``ranking/io/_trecscan.c``; ranking.io.trec_scan)."""

class Buffer:
    """Bytes written by the scan, read through the buffer protocol (no copy)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def scan(
    path: str,
    delimiter: int,
    trailing: bool,
    ncols: int,
    qid_col: int,
    doc_col: int,
    value_cols: tuple[int, ...],
    block_size: int,
    /,
) -> tuple[list[str], Buffer, Buffer, Buffer, Buffer, tuple[Buffer, ...]] | str | None: ...
def string_hashes(offsets: Buffer | bytes | memoryview, data: object, /) -> Buffer: ...
def join(
    run_query: object,
    run_hashes: object,
    truth_code: object,
    bits: int,
    sorted_keys: object,
    key_order: object,
    run_offsets: object,
    run_data: object,
    truth_offsets: object,
    truth_data: object,
    truth_values: object,
    /,
) -> Buffer: ...
