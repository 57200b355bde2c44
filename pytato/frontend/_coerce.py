"""Turning array-like arguments of front-end functions into arrays.

.. autofunction:: as_array
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytato.array.base import Array
from pytato.diagnostic import InvalidArgumentTypeError
from pytato.scalar_expr import SCALAR_CLASSES


def as_array(x: Any, argname: str) -> Array:
    """Return *x* if it is an :class:`~pytato.array.Array`; wrap numpy arrays
    and scalars as :class:`~pytato.array.DataWrapper`\\ s; raise
    :class:`TypeError` naming *argname* for anything else."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, *SCALAR_CLASSES)):
        from pytato.array.constructors import check_dtype, make_data_wrapper
        data = np.asarray(x)
        check_dtype(data.dtype, argname)
        return make_data_wrapper(data)
    raise InvalidArgumentTypeError(
        f"'{argname}' must be an array, got {type(x).__name__}")
