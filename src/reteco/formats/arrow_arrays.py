"""Converting Arrow arrays to numpy without pandas.

pyarrow's ``to_numpy`` goes through its pandas compatibility layer, which imports pandas
(~0.2 s) on first use, whenever the conversion is not zero-copy (chunked arrays, booleans).
Scoring has no other use for pandas, so conversions here stay zero-copy where Arrow allows
(primitive arrays without nulls) and cast booleans to bytes first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def to_numpy(values: pa.Array | pa.ChunkedArray, fill=None) -> np.ndarray:
    """A numpy array of an Arrow array or chunked array of numbers or booleans.

    Nulls become ``fill`` (an error when ``fill`` is None). Without nulls the result may be
    read-only (a view of Arrow's memory): copy it before writing into it. (Arrow's own
    ``fill_null`` with a Python value, like ``pa.array`` of a list, also imports pandas.)
    """
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if not chunks:
        return np.zeros(0, dtype=_NUMPY_TYPES.get(values.type, np.float64))
    parts = [_one(chunk, fill) for chunk in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def _one(array: pa.Array, fill=None) -> np.ndarray:
    if array.null_count:
        if fill is None:
            raise ValueError("the array has nulls: give the value that replaces them")
        valid = _one(array.is_valid())
        return np.where(valid, _values(array), fill)
    return _values(array)


def _values(array: pa.Array) -> np.ndarray:
    """The values buffer in place (whatever lies under null slots included)."""
    if pa.types.is_boolean(array.type):
        return _values(pc.cast(array, pa.uint8())).view(np.bool_)
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is None:
        raise TypeError(f"to_numpy takes numbers or booleans, not {array.type}")
    # The values buffer viewed in place: even Arrow's zero-copy to_numpy consults pandas.
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * np.dtype(dtype).itemsize)


def from_numpy(values: np.ndarray) -> pa.Array:
    """An Arrow array over a numpy array of integers or floats (no nulls), built from its buffer:
    ``pa.array(numpy_array)`` would consult pandas first."""
    values = np.ascontiguousarray(values)
    arrow_type = {np.dtype(v): k for k, v in _NUMPY_TYPES.items()}.get(values.dtype)
    if arrow_type is None:
        raise TypeError(f"from_numpy takes integers or floats, not {values.dtype}")
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])
