"""The module paths of the loopy backend before it was split into stages.

``import pytato.target.loopy.launcher`` and the like keep working: each old
path is an alias module whose attributes are those of the module that holds
the code now, with a :class:`DeprecationWarning` naming the new path.
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

#: old module path -> the module that holds its code now
MOVED_MODULES: dict[str, str] = {
    f"{_BASE}.launcher": "pytato.launchers",
    f"{_BASE}.launch": f"{_BASE}.run.launcher",
    f"{_BASE}.programs": f"{_BASE}.run.programs",
    f"{_BASE}.arguments": f"{_BASE}.run.arguments",
    f"{_BASE}.executor": f"{_BASE}.run.executor",
    f"{_BASE}.preprocessing": f"{_BASE}.run.preprocessing",
    f"{_BASE}.cl_target": f"{_BASE}.run.cl_target",
    f"{_BASE}.program_store": f"{_BASE}.run.program_store",
    f"{_BASE}.index_checks": f"{_BASE}.lower.index_checks",
    f"{_BASE}.calls": f"{_BASE}.lower.calls",
    f"{_BASE}.sparse": f"{_BASE}.lower.sparse",
    f"{_BASE}.fusion": f"{_BASE}.lower.fusion",
    f"{_BASE}.index_arith": f"{_BASE}.lower.index_arith",
    f"{_BASE}.creation": f"{_BASE}.lower.creation",
    f"{_BASE}.tiling": f"{_BASE}.schedule.tiling",
    f"{_BASE}.reduction": f"{_BASE}.schedule.reductions",
    f"{_BASE}.accumulate": f"{_BASE}.schedule.accumulators",
}


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec
                      ) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new_name = MOVED_MODULES[module.__name__]
        warnings.warn(
            f"'{module.__name__}' moved to '{new_name}'; import it from there",
            DeprecationWarning, stacklevel=2)
        target = importlib.import_module(new_name)

        def __getattr__(name: str) -> Any:
            return getattr(target, name)

        def __dir__() -> list[str]:
            return dir(target)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]
        module.__doc__ = f"Moved to :mod:`{new_name}`."


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
