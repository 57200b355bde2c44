"""Python code generation targets: the generated code is a Python function
calling a :mod:`numpy`-like array module.

.. automodule:: pytato.target.python.numpy_like
.. automodule:: pytato.target.python.jax
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from pytato.transform.precompute import set_default_evaluator


if TYPE_CHECKING:
    from collections.abc import Mapping

    from pytato.array.results import DictOfNamedArrays


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


def _evaluate_with_numpy(outputs: DictOfNamedArrays) -> Mapping[str, Any]:
    return generate_numpy(outputs)()


# constant folding (pytato.transform.precompute) evaluates with numpy by
# default; transforms do not import targets, so the target registers itself
set_default_evaluator(_evaluate_with_numpy)
