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
