"""Modules imported at their first use.

A warm process (one whose programs the program store already has, see
:mod:`pytato.target.loopy.store.program_store`) runs them without
:mod:`loopy`, whose import is a large part of its time. Modules on that
path name :mod:`loopy` and :mod:`islpy` through :func:`lazy_module`, so
that ``import pytato`` does not import them; the first attribute read
does.

.. autofunction:: lazy_module
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any


class _LazyModule:
    """Stands for the module *name*, imported when an attribute is read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = sys.modules.get(self._name)
        if module is None:
            module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported at first use>"


def lazy_module(name: str) -> Any:
    """The module *name* if it is imported already, else a stand-in that
    imports it when one of its attributes is read (``lp.Options`` then
    is :class:`loopy.Options`)."""
    module: ModuleType | None = sys.modules.get(name)
    if module is not None:
        return module
    return _LazyModule(name)


__all__ = ["lazy_module"]
