"""Python code generation targets: the generated code is a Python function
calling a :mod:`numpy`-like array module.

.. autoclass:: PythonTarget
.. autoclass:: NumpyTarget
.. autoclass:: BoundPythonProgram
.. autofunction:: generate_numpy
.. autoclass:: JAXPythonTarget
.. autoclass:: BoundJAXPythonProgram
.. autofunction:: generate_jax
"""

from __future__ import annotations

from pytato.target.python.jax import (
    BoundJAXPythonProgram,
    JAXPythonTarget,
    generate_jax,
)
from pytato.target.python.numpy_like import (
    BoundPythonProgram,
    NumpyTarget,
    PythonTarget,
    generate_numpy,
)


__all__ = [
    "BoundJAXPythonProgram",
    "BoundPythonProgram",
    "JAXPythonTarget",
    "NumpyTarget",
    "PythonTarget",
    "generate_jax",
    "generate_numpy",
]
