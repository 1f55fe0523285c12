"""64-bit keys of TREC ids for joining a run with qrels (docs/metrics.md#large-files): a hash
of each string (:func:`string_hashes`, vectorised over Arrow or Python strings) and a key per
(query, document) row (:func:`pair_keys`). A key only finds candidates: the join checks
every match on the strings themselves (:mod:`ranking.io.trec_join`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec_scan import compiled_scanner

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["pair_keys", "query_bits", "string_hashes"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: ``_TOP_BYTES[k]``: a word whose k most significant bytes are ones (k = 0..8).
_TOP_BYTES = np.array([((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(9)], dtype=np.uint64)


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The splitmix64 finaliser (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number
    generators"), in place: a bijection of uint64 whose every output bit depends on every input
    bit. Returns ``x``."""
    tmp = np.empty_like(x)
    for shift, factor in ((30, _M1), (27, _M2)):
        np.right_shift(x, np.uint64(shift), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, factor, out=x)
    np.right_shift(x, np.uint64(31), out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    return x


def _hash_bytes(data: NDArray[np.uint8], offsets: NDArray[np.int64]) -> NDArray[np.uint64]:
    """Hash string ``i`` = ``data[offsets[i]:offsets[i + 1]]``: starting from its byte length,
    each of its bytes' big-endian 8-byte words (the last one zero-filled) is xored in and the
    state multiplied by an odd constant (a bijection: strings that differ in one word only
    never collide), then :func:`_mix` spreads every bit over the high bits that
    :func:`pair_keys` keeps. The value depends on the string only."""
    n = offsets.shape[0] - 1
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    lengths = np.diff(offsets)
    start, end = int(offsets[0]), int(offsets[-1])
    words = -(-int(lengths.max()) // 8)
    # the bytes plus zeros past the last word of any string, read as one overlapping uint64
    # at every byte position
    padded = np.zeros(end - start + 8 * words + 8, dtype=np.uint8)
    padded[: end - start] = data[start:end]
    at_byte = np.ndarray((padded.shape[0] - 7,), dtype=">u8", buffer=padded, strides=(1,))
    begin = offsets[:-1] - start
    h = _mix(lengths.astype(np.uint64) + _GOLDEN)
    word = np.empty(n, dtype=np.uint64)
    for j in range(words):
        left = np.clip(lengths - 8 * j, 0, 8)  # bytes of the string in this word
        np.copyto(word, at_byte[begin])
        begin += 8
        np.bitwise_and(word, _TOP_BYTES[left], out=word)
        np.bitwise_xor(word, h, out=word)
        np.multiply(word, _GOLDEN, out=word)
        if j == 0 and lengths.min() > 0:
            h, word = word, h  # every string has a first word
        else:
            # only the words a string has: its hash must not depend on the longest neighbour
            np.copyto(h, word, where=left > 0)
    return _mix(h)


def _arrow_strings(chunk: pa.Array) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """The UTF-8 bytes and offsets of a string array, without copying the bytes."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    if chunk.type not in (pa.string(), pa.large_string()):
        chunk = chunk.cast(pa.string())
    width = 8 if chunk.type == pa.large_string() else 4
    bufs = chunk.buffers()
    offsets = np.frombuffer(
        bufs[1],
        dtype=np.int64 if width == 8 else np.int32,
        count=len(chunk) + 1,
        offset=chunk.offset * width,
    ).astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets


def _hash_strings(data: NDArray[np.uint8], offsets: NDArray[np.int64]) -> NDArray[np.uint64]:
    """:func:`_hash_bytes`, in C when the compiled scan is there (the same values)."""
    scanner = compiled_scanner()
    if scanner is None or offsets.shape[0] < 2:
        return _hash_bytes(data, offsets)
    out = scanner.string_hashes(np.ascontiguousarray(offsets, dtype=np.int64), data)
    return np.frombuffer(out, dtype=np.uint64)


def string_hashes(strings: pa.Array | pa.ChunkedArray | list[str]) -> NDArray[np.uint64]:
    """A 64-bit hash of each string (vectorised; equal strings hash equal)."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    if isinstance(strings, list):
        encoded = [s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return _hash_strings(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    parts = [_hash_strings(*_arrow_strings(chunk)) for chunk in chunks if len(chunk)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def query_bits(n_queries: int) -> int:
    """The high bits of a :func:`pair_keys` key that hold the query code."""
    return max(1, int(n_queries).bit_length())


def pair_keys(
    query: NDArray[np.int32], doc_hashes: NDArray[np.uint64], n_queries: int
) -> NDArray[np.uint64]:
    """A 64-bit key per (query, document) row: the query code (``0 <= query < n_queries``) in
    the high :func:`query_bits`, the document hash's high bits below. Keys of two files are
    comparable when their codes number the queries alike. Equal pairs have equal keys; two
    documents of one query share a key only if their hashes agree in the bits kept.
    Overwrites ``doc_hashes``."""
    bits = np.uint64(query_bits(n_queries))
    np.right_shift(doc_hashes, bits, out=doc_hashes)
    step = 1 << 18  # slices: the codes' temporaries stay small
    for start in range(0, doc_hashes.shape[0], step):
        codes = query[start : start + step].astype(np.uint64)
        np.left_shift(codes, np.uint64(64) - bits, out=codes)
        np.bitwise_or(doc_hashes[start : start + step], codes, out=doc_hashes[start : start + step])
    return doc_hashes
