"""Pickling of graphs as flat lists, so that deep graphs do not exhaust
Python's recursion limit.

.. autofunction:: reduce_array
.. autofunction:: reduce_dict_of_named_arrays
"""

from __future__ import annotations

# the reducers are defined with the classes they pickle (pytato.array.base
# and pytato.array.results, which would otherwise import each other
# through this module); _rebuild and _rebuild_dict are named by pickles
from pytato.array.base import _rebuild, reduce_array
from pytato.array.results import _rebuild_dict, reduce_dict_of_named_arrays


__all__ = ["_rebuild", "_rebuild_dict", "reduce_array",
           "reduce_dict_of_named_arrays"]
