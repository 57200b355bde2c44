"""Translation units from the program store, unpickled when first needed.

A process that finds a program generated without a device in the program
store (:mod:`~pytato.target.loopy.run.program_store`) runs it from the unit
scheduled for its device, also stored: the lowered unit
(:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.program`)
is needed only for the user's transformations, for a device whose
schedule is not stored, or to show it. Unpickling it took 0.08 s of a
warm process of the 10 000-node DAG of ``benchmarks/bench_codegen.py``
(PoCL machine). The program holds a :class:`StoredUnit` instead, with the
few facts its calls need (:class:`UnitFacts`), and unpickles it at the
first access of the attribute (:class:`LazyUnitField`), where it then
stays.

.. autoclass:: UnitFacts
.. autoclass:: StoredUnit
.. autoclass:: LazyUnitField
.. autofunction:: unit_facts
.. autofunction:: loaded
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

import pytato.target.loopy.run.program_store as program_store
from pytato.target.loopy.run.arguments import ArgumentSpec


if TYPE_CHECKING:
    from collections.abc import Callable

    import loopy as lp


_logger = logging.getLogger("pytato.target.loopy")


class UnitFacts(NamedTuple):
    """What a call of a program generated without a device needs of its
    lowered unit, stored with it (the part ``"unit-facts"`` of its key).

    .. attribute:: generated_inames

        The inames of the entrypoint
        (:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.generated_inames`).

    .. attribute:: arg_spec

        The :class:`~pytato.target.loopy.run.arguments.ArgumentSpec` of the
        entrypoint.

    .. attribute:: no_numpy

        The entrypoint's option ``no_numpy``.
    """

    generated_inames: frozenset[str]
    arg_spec: ArgumentSpec
    no_numpy: bool


def unit_facts(t_unit: lp.TranslationUnit) -> UnitFacts:
    """The :class:`UnitFacts` of the lowered unit *t_unit*."""
    knl = t_unit.default_entrypoint
    return UnitFacts(frozenset(knl.all_inames()),
                     ArgumentSpec.from_kernel(knl), bool(knl.options.no_numpy))


class StoredUnit:
    """A translation unit as the program store keeps it (pickled), with
    its :class:`UnitFacts`. :meth:`load` unpickles it; where the stored
    bytes cannot be read, *regenerate* makes the unit anew (from the
    user's graph). Pickled, it is the unit."""

    __slots__ = ("_data", "_regenerate", "facts")

    def __init__(self, data: bytes, facts: UnitFacts,
                 regenerate: Callable[[], lp.TranslationUnit]) -> None:
        self._data = data
        self._regenerate = regenerate
        self.facts = facts

    def load(self) -> lp.TranslationUnit:
        """The translation unit."""
        try:
            return program_store.loads(self._data)
        except Exception as e:
            _logger.warning("program store: cannot read a unit (%s: %s), "
                            "generating it anew", type(e).__name__, e)
            return self._regenerate()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_same, (self.load(),))


def _same(value: Any) -> Any:
    return value


def loaded(value: Any) -> Any:
    """*value*, or the unit of a :class:`StoredUnit`."""
    return value.load() if type(value) is StoredUnit else value


class LazyUnitField:
    """The data descriptor of a dataclass field that holds a translation
    unit or a :class:`StoredUnit`: reading the attribute unpickles the
    latter (once; the unit replaces it). :meth:`raw` reads it as it is.
    Set on the class after the dataclass is made (its ``__init__`` then
    stores the field's value through the descriptor)."""

    def __init__(self, name: str) -> None:
        self.slot = f"_pt_lazy_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.slot]
        if type(value) is StoredUnit:
            value = value.load()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value

    def raw(self, obj: Any) -> Any:
        """The value of the field of *obj*, perhaps a :class:`StoredUnit`."""
        return obj.__dict__[self.slot]


# vim: foldmethod=marker
