"""Python code generation targets: the generated code is a Python function
calling a :mod:`numpy`-like array module.

.. autoclass:: PythonTarget
.. autoclass:: NumpyTarget
.. autoclass:: BoundPythonProgram
.. autofunction:: generate_numpy
"""

from __future__ import annotations

from pytato.target.python.numpy_like import (
    BoundPythonProgram,
    NumpyTarget,
    PythonTarget,
    generate_numpy,
)


__all__ = [
    "BoundPythonProgram",
    "NumpyTarget",
    "PythonTarget",
    "generate_numpy",
]
