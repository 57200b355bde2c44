"""Code generation to :mod:`loopy` and execution with :mod:`pyopencl`.

:func:`generate_loopy` lowers an array graph to a
:class:`loopy.TranslationUnit` (see :mod:`pytato.target.loopy.lower.graph`) and
binds it, with the data of the graph's data wrappers, into a
:class:`BoundPyOpenCLProgram`.

.. autofunction:: generate_loopy
.. autodata:: PROGRAM_CACHE

See :mod:`pytato.target.loopy.run.programs` for :class:`LoopyTarget`,
:class:`LoopyPyOpenCLTarget`, :class:`BoundPyOpenCLProgram` and
:class:`BoundPyOpenCLExecutable`.

The backend is a package per stage, each importing only those before it:
:mod:`~pytato.target.loopy.lower` (graph to loopy),
:mod:`~pytato.target.loopy.store` (the program store and cache),
:mod:`~pytato.target.loopy.build` (device code and its builds),
:mod:`~pytato.target.loopy.schedule` (loopy to loopy for a device),
:mod:`~pytato.target.loopy.run` (programs and their calls), and
:mod:`~pytato.target.loopy.pipeline`, the driver, which imports them all.
This module only re-exports; the module paths from before the stages are
kept by :mod:`pytato.target.loopy._compat`.
"""

from __future__ import annotations

import importlib
from typing import Any

from pytato.tags import ImplStored, ImplSubstitution, Named, PrefixNamed, Tag
from pytato.target.loopy._compat import install as _install_moved_modules
from pytato.target.loopy.pipeline import (
    generate as _generate,
    store_keys as _store_keys,
)
from pytato.target.loopy.pipeline.generate import generate_loopy
from pytato.target.loopy.run.programs import (
    BoundPyOpenCLExecutable,
    BoundPyOpenCLProgram,
    LoopyPyOpenCLTarget,
    LoopyTarget,
)
from pytato.target.loopy.store.program_cache import PROGRAM_CACHE


__all__ = [
    "PROGRAM_CACHE", "BoundPyOpenCLExecutable", "BoundPyOpenCLProgram",
    "ImplStored", "ImplSubstitution", "LoopyPyOpenCLTarget", "LoopyTarget",
    "Named", "PrefixNamed", "Tag", "generate_loopy",
]

_install_moved_modules()


def __getattr__(name: str) -> Any:
    # pytato.target.loopy.codegen (the reference's module of the code
    # generator) imports loopy: imported at its first use as an attribute
    if name == "codegen":
        return importlib.import_module(f"{__name__}.codegen")
    # the other names this module had before its code moved to the
    # pipeline stage
    for module in (_generate, _store_keys):
        if name in vars(module):
            return vars(module)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
