"""The module paths of the loopy backend before its code moved, kept
importable: the one place of compatibility shims for moved modules.

``import pytato.target.loopy.launcher``,
``import pytato.target.loopy.run.cl_target`` and the like keep working:
each old path is an alias module whose attributes are those of the module
that holds the code now (of the modules, for a module whose code was split
in two: the first that has the name), with a :class:`DeprecationWarning`
naming the new path.
(``pytato.target.loopy.codegen``, the reference pytato's path, is a real
module, and ``pytato.target.loopy.schedule`` is now the schedule stage's
package, which still provides the old module's two names.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any


_BASE = "pytato.target.loopy"

_RUN = f"{_BASE}.run"

#: old module path -> the module (or modules, for a split module, looked up
#: in order) that holds its code now
MOVED_MODULES: dict[str, str | tuple[str, ...]] = {
    # before the stages
    f"{_BASE}.launcher": "pytato.launchers",
    f"{_BASE}.launch": f"{_BASE}.run.launcher",
    f"{_BASE}.programs": f"{_BASE}.run.programs",
    f"{_BASE}.arguments": f"{_BASE}.run.arguments",
    f"{_BASE}.executor": f"{_BASE}.run.executor",
    f"{_BASE}.preprocessing": f"{_BASE}.build.preprocessing",
    f"{_BASE}.cl_target": f"{_BASE}.build.cl_target",
    f"{_BASE}.program_store": f"{_BASE}.store.program_store",
    f"{_BASE}.index_checks": f"{_BASE}.lower.index_checks",
    f"{_BASE}.calls": f"{_BASE}.lower.calls",
    f"{_BASE}.sparse": f"{_BASE}.lower.sparse",
    f"{_BASE}.fusion": f"{_BASE}.lower.fusion",
    f"{_BASE}.index_arith": f"{_BASE}.lower.index_arith",
    f"{_BASE}.creation": f"{_BASE}.lower.creation",
    f"{_BASE}.tiling": f"{_BASE}.schedule.tiling",
    f"{_BASE}.reduction": f"{_BASE}.schedule.reductions",
    f"{_BASE}.accumulate": f"{_BASE}.schedule.accumulators",
    # the run stage before the build and store stages left it
    **{f"{_RUN}.{name}": f"{_BASE}.build.{name}" for name in (
        "binaries", "child_processes", "cl_complex", "cl_math", "cl_target",
        "jit_primer", "job_processes", "launch_once", "parallel_builds",
        "preprocessing", "split", "split_sizes", "target_parameters")},
    **{f"{_RUN}.{name}": f"{_BASE}.store.{name}" for name in (
        "program_cache", "program_store")},
    f"{_RUN}.split_build": (f"{_BASE}.build.split_build",
                            f"{_BASE}.run.split_executor"),
    # this module's path before it held every shim
    f"{_BASE}._moved": f"{_BASE}._compat",
}


def new_paths(old: str) -> tuple[str, ...]:
    """The module paths that hold the code of the old module path *old*."""
    new = MOVED_MODULES[old]
    return (new,) if isinstance(new, str) else new



class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec
                      ) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new_names = new_paths(module.__name__)
        new_name = " and ".join(f"'{name}'" for name in new_names)
        warnings.warn(
            f"'{module.__name__}' moved to {new_name}; import it from there",
            DeprecationWarning, stacklevel=2)
        targets = [importlib.import_module(name) for name in new_names]

        def __getattr__(name: str) -> Any:
            for target in targets[:-1]:
                if hasattr(target, name):
                    return getattr(target, name)
            return getattr(targets[-1], name)

        def __dir__() -> list[str]:
            return sorted({name for target in targets for name in dir(target)})

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]
        module.__doc__ = "Moved to " + " and ".join(
            f":mod:`{name}`" for name in new_names) + "."


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader())


def install() -> None:
    """Let the old module paths be imported (idempotent)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
