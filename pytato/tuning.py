"""The constants that tune code generation, as the keys of the program
store see them.

Modules whose public constants (upper-case names of numbers, strings,
tuples and frozensets, e.g.
:data:`pytato.target.loopy.schedule.tiling_plan.MAX_ELEMENTS_PER_ITEM`)
tune code generation call :func:`record_defaults` at the end of their
code. Their values as written there are part of pytato's sources, whose
digest is in every key of the store; :func:`changed_constants` gives the
ones a process changed since (e.g. a test, or a user tuning a constant),
so that a program generated after such a change is not found under the
written values. A process that never imports such a module (one that
finds all its programs in the store) has not changed its constants, and
computes the same keys without importing it.

.. autofunction:: record_defaults
.. autofunction:: changed_constants
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any


__all__ = ["changed_constants", "record_defaults"]

_SIMPLE = (int, float, str, bool, tuple, frozenset)

_DEFAULTS: dict[str, dict[str, Any]] = {}


def _constants(namespace: Mapping[str, object]) -> dict[str, Any]:
    return {name: value for name, value in namespace.items()
            if name.isupper() and not name.startswith("_")
            and isinstance(value, _SIMPLE)}


def record_defaults(module_name: str, namespace: Mapping[str, object]) -> None:
    """Record the constants of the module *module_name* (its *namespace*,
    ``globals()``) as its code sets them."""
    _DEFAULTS[module_name] = _constants(namespace)


def changed_constants(module_names: Iterable[str]
                      ) -> tuple[tuple[str, Any], ...]:
    """The constants of the modules *module_names* whose values differ
    from those recorded by :func:`record_defaults` (or that were added
    since), as ``(module.NAME, value)``, sorted; constants deleted since
    are given as ``(module.NAME, "<deleted>")``. Modules not imported have
    none."""
    result: list[tuple[str, object]] = []
    for module_name in module_names:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        defaults = _DEFAULTS.get(module_name)
        if defaults is None:
            raise RuntimeError(
                f"module {module_name!r} did not record its constants "
                "(pytato.tuning.record_defaults)")
        current = _constants(vars(module))
        for name in sorted(current.keys() | defaults.keys()):
            value = current.get(name, "<deleted>")
            if name not in defaults or defaults[name] != value \
                    or type(defaults[name]) is not type(value):
                result.append((f"{module_name}.{name}", value))
    return tuple(result)
