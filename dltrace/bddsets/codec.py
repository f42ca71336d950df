"""Vectorized LEB128 varints and zigzag on numpy arrays.

Lineage encodings are streams of small unsigned integers (deltas, run lengths,
node references). Encoding and decoding them one Python int at a time would
dominate the cost of a Spark UDF, so every function here works on whole arrays
with a fixed number of numpy passes (at most 10, one per varint byte).

>>> encode_varints(np.array([0, 127, 128, 300], dtype=np.uint64)).hex()
'007f8001ac02'
>>> decode_varints(np.frombuffer(bytes.fromhex('007f8001ac02'), np.uint8))[0].tolist()
[0, 127, 128, 300]
>>> unzigzag(zigzag(np.array([-3, 0, 5]))).tolist()
[-3, 0, 5]
"""

from __future__ import annotations

import numpy as np

from .base import LineageDecodeError

MAX_VARINT_BYTES = 10
_SIZE_THRESHOLDS = [np.uint64(1 << (7 * k)) for k in range(1, MAX_VARINT_BYTES)]
_LOW7 = np.uint64(0x7F)


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes each uint64 value of a 1-D array takes as a varint (1..10), as int64."""
    values = values.reshape(-1)
    sizes = np.ones(values.size, dtype=np.int64)
    longer = np.flatnonzero(values >= _SIZE_THRESHOLDS[0])
    for threshold in _SIZE_THRESHOLDS[1:]:  # most values are small: later passes see only the long ones
        if not longer.size:
            break
        sizes[longer] += 1
        longer = longer[values[longer] >= threshold]
    sizes[longer] += 1
    return sizes


def encode_varints(values: np.ndarray, sizes: np.ndarray | None = None) -> bytes:
    """LEB128-encode a uint64 array into one byte string (``sizes``: its varint_sizes, when known)."""
    values = values.astype(np.uint64, copy=False)
    sizes = varint_sizes(values) if sizes is None else sizes
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    positions = np.cumsum(sizes) - sizes
    remaining, left = values, sizes
    for _ in range(int(sizes.max(initial=0))):
        continues = left > 1
        out[positions] = (remaining & _LOW7).astype(np.uint8) | (continues.astype(np.uint8) << 7)
        remaining, left = remaining[continues] >> np.uint64(7), left[continues] - 1
        positions = positions[continues] + 1
    return out.tobytes()


def decode_varints(stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode a uint8 array that holds only varints.

    Returns the values (uint64) and, for each, the index of its last byte, which
    callers use to tell which input a value came from. Rejects a truncated last
    varint, varints longer than 10 bytes or above 2**64 - 1, and overlong forms
    (a redundant trailing zero byte), so every value has exactly one encoding.
    """
    if stream.size == 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    terminal = stream < 0x80
    if not terminal[-1]:
        raise LineageDecodeError("truncated varint at the end of a lineage encoding")
    ends = np.flatnonzero(terminal)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    sizes = ends - starts + 1
    if sizes.max() > MAX_VARINT_BYTES:
        raise LineageDecodeError("varint longer than 10 bytes in a lineage encoding")
    if np.any((sizes > 1) & (stream[ends] == 0)):
        raise LineageDecodeError("overlong varint (redundant zero byte) in a lineage encoding")
    if np.any((sizes == MAX_VARINT_BYTES) & (stream[ends] > 1)):
        raise LineageDecodeError("varint above 2**64 - 1 in a lineage encoding")
    values = np.zeros(ends.size, dtype=np.uint64)
    for k in range(int(sizes.max())):
        selected = np.flatnonzero(sizes > k)
        chunk = stream[starts[selected] + k].astype(np.uint64) & _LOW7
        values[selected] |= chunk << np.uint64(7 * k)
    return values, ends


def read_varints_at(buffer: np.ndarray, positions: np.ndarray, limits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode one varint at each position, each bounded by its own limit (exclusive).

    Used for header fields that precede raw bytes, where the stream is not pure
    varints. Returns the values and the position just after each varint.
    """
    offsets = np.arange(MAX_VARINT_BYTES, dtype=np.int64)
    where = positions[:, None] + offsets[None, :]
    inside = where < limits[:, None]
    window = buffer[np.minimum(where, buffer.size - 1)]
    terminal = (window < 0x80) & inside
    if not np.all(terminal.any(axis=1)):
        raise LineageDecodeError("truncated varint in a lineage encoding header")
    sizes = np.argmax(terminal, axis=1) + 1
    last = window[np.arange(window.shape[0]), sizes - 1]
    if np.any((sizes > 1) & (last == 0)) or np.any((sizes == MAX_VARINT_BYTES) & (last > 1)):
        raise LineageDecodeError("malformed varint in a lineage encoding header")
    used = offsets[None, :] < sizes[:, None]
    parts = (window.astype(np.uint64) & _LOW7) << (np.uint64(7) * offsets.astype(np.uint64))[None, :]
    values = np.bitwise_or.reduce(np.where(used, parts, np.uint64(0)), axis=1)
    return values.astype(np.uint64), positions + sizes


def zigzag(values: np.ndarray) -> np.ndarray:
    """Map int64 to uint64 so that small magnitudes of either sign stay small."""
    values = values.astype(np.int64, copy=False)
    return ((values << np.int64(1)) ^ (values >> np.int64(63))).view(np.uint64)


def unzigzag(values: np.ndarray) -> np.ndarray:
    """Inverse of :func:`zigzag`."""
    values = values.astype(np.uint64, copy=False)
    return ((values >> np.uint64(1)) ^ (np.uint64(0) - (values & np.uint64(1)))).view(np.int64)
