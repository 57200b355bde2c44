"""The parameters of the :mod:`loopy` target of a program, without
:mod:`loopy`.

:class:`~pytato.target.loopy.LoopyPyOpenCLTarget` gives a
:class:`~pytato.target.loopy.build.cl_target.PytatoPyOpenCLTarget` made from
:func:`loopy_target_parameters`; the keys of the program store
(:mod:`~pytato.target.loopy.store.program_store`) name the loopy target by
:func:`loopy_target_key`, which a process finding its programs in the
store computes without importing :mod:`loopy`.

.. autodata:: OUT_OF_LINE_MATH_ENV
.. autofunction:: out_of_line_math_enabled
.. autodata:: MAX_RESTRICT_ARGUMENTS
.. autodata:: GPU_MAX_RESTRICT_ARGUMENTS
.. autofunction:: loopy_target_parameters
.. autofunction:: loopy_target_key
"""

from __future__ import annotations

import os
from typing import Any

from pytato.tuning import record_defaults


__all__ = ["GPU_MAX_RESTRICT_ARGUMENTS", "MAX_RESTRICT_ARGUMENTS",
           "OUT_OF_LINE_MATH_ENV", "loopy_target_key",
           "loopy_target_parameters", "out_of_line_math_enabled"]


#: The environment variable that switches out-of-line math functions
#: (:mod:`~pytato.target.loopy.build.cl_math`) on (``1``), read when a
#: program's loopy target is made.
OUT_OF_LINE_MATH_ENV = "PYTATO_OUT_OF_LINE_MATH"


def out_of_line_math_enabled() -> bool:
    """Whether programs call the functions of
    :data:`~pytato.target.loopy.build.cl_math.OUT_OF_LINE_FUNCTIONS` out of
    line: :data:`OUT_OF_LINE_MATH_ENV` is ``1`` (off by default)."""
    flag = os.environ.get(OUT_OF_LINE_MATH_ENV, "").strip().lower()
    return flag in ("1", "true", "yes", "on")


#: Device kernels with more arguments than this declare their pointer
#: arguments without ``restrict`` (see
#: :mod:`~pytato.target.loopy.build.cl_target`).
MAX_RESTRICT_ARGUMENTS = 32

#: :data:`MAX_RESTRICT_ARGUMENTS` for programs generated for a GPU.
GPU_MAX_RESTRICT_ARGUMENTS = 128


def loopy_target_parameters(gpu: bool, out_of_line_math: bool
                            ) -> dict[str, Any]:
    """The keyword arguments of
    :class:`~pytato.target.loopy.build.cl_target.PytatoPyOpenCLTarget` for a
    GPU (*gpu*) or another device, with or without out-of-line math
    functions (:mod:`~pytato.target.loopy.build.cl_math`)."""
    return {"max_restrict_arguments": (GPU_MAX_RESTRICT_ARGUMENTS if gpu
                                       else MAX_RESTRICT_ARGUMENTS),
            "out_of_line_math": bool(out_of_line_math)}


def loopy_target_key(parameters: dict[str, Any]) -> tuple[Any, ...]:
    """What the keys of the program store name the target made from
    *parameters* by (with the versions of :mod:`loopy` and of pytato's
    sources, also in every key, they determine it)."""
    return ("PytatoPyOpenCLTarget", *sorted(parameters.items()))


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
