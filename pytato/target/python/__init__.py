"""Python code generation targets: the generated code is a Python function
calling a :mod:`numpy`-like array module.

.. automodule:: pytato.target.python.numpy_like
.. automodule:: pytato.target.python.jax
"""

from __future__ import annotations

from pytato.target.python.jax import (
    BoundJAXPythonProgram,
    JAXPythonTarget,
    generate_jax,
)
from pytato.target.python.numpy_like import (
    BoundPythonProgram,
    NumpyLikePythonTarget,
    NumpyTarget,
    PythonTarget,
    generate_numpy,
)


__all__ = [
    "BoundJAXPythonProgram",
    "BoundPythonProgram",
    "JAXPythonTarget",
    "NumpyLikePythonTarget",
    "NumpyTarget",
    "PythonTarget",
    "generate_jax",
    "generate_numpy",
]
