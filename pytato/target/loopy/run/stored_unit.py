"""Translation units from the program store, unpickled when first needed.

A process that finds a program in the program store
(:mod:`~pytato.target.loopy.store.program_store`) runs it from the compiled
code of its scheduled unit, also stored:

* the lowered unit of a program generated without a device
  (:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.program`)
  is needed only for the user's transformations, for a device whose
  schedule is not stored, or to show it;
* of the scheduled unit, the executor of the split path
  (:class:`~pytato.target.loopy.run.split_executor.SplitExecutor`) reads the
  arguments, temporaries and options of its kernel
  (:class:`~pytato.target.loopy.run.kernel_facts.KernelFacts`, stored as
  plain data: no :mod:`loopy` needed), unless a compiled sub-unit is
  missing from the store.

Unpickling each was a visible part of a warm process's first call for the
10 000-node DAG of ``benchmarks/bench_codegen.py``. Programs hold a
:class:`StoredUnit` instead, with the few facts their calls need
(:class:`UnitFacts`, :class:`RunFacts`), and unpickle it at the first
access of the attribute (:class:`LazyUnitField`), where it then stays.

.. autoclass:: UnitFacts
.. autoclass:: RunFacts
.. autoclass:: StoredUnit
.. autoclass:: LazyUnitField
.. autofunction:: unit_facts
.. autofunction:: run_facts
.. autofunction:: stored_unit
.. autofunction:: save_unit
.. autofunction:: loaded
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

import pytato.target.loopy.store.program_store as program_store
from pytato.target.loopy.run.arguments import ArgumentSpec
from pytato.target.loopy.run.kernel_facts import KernelFacts, kernel_facts


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
    """The :class:`UnitFacts` of *t_unit*."""
    knl = t_unit.default_entrypoint
    return UnitFacts(frozenset(knl.all_inames()),
                     ArgumentSpec.from_kernel(knl), bool(knl.options.no_numpy))


class RunFacts(NamedTuple):
    """What making the executor of a scheduled unit needs of it, stored
    with it (the part ``"run-facts"`` of its key): plain data, which a
    process unpickles without :mod:`loopy`.

    .. attribute:: kernel

        The :class:`~pytato.target.loopy.run.kernel_facts.KernelFacts` of
        the entrypoint.
    """

    kernel: KernelFacts


def run_facts(t_unit: lp.TranslationUnit) -> RunFacts | None:
    """The :class:`RunFacts` of the scheduled unit *t_unit*; None for a unit
    of several entrypoints."""
    if len(t_unit.entrypoints) != 1:
        return None
    (entrypoint,) = t_unit.entrypoints
    return RunFacts(kernel_facts(t_unit, entrypoint))


class StoredUnit:
    """A translation unit as the program store keeps it (pickled), with
    its :class:`UnitFacts` and, for a scheduled unit, its
    :class:`RunFacts`. :meth:`load` unpickles it (once: every holder of
    the object then shares the unit); where the stored bytes cannot be
    read, *regenerate* makes the unit anew (from the user's graph).
    Pickled, it is the unit."""

    __slots__ = ("_data", "_regenerate", "_unit", "facts", "run")

    def __init__(self, data: bytes, facts: UnitFacts | None,
                 regenerate: Callable[[], lp.TranslationUnit],
                 run: RunFacts | None = None) -> None:
        self._data = data
        self._regenerate: Callable[[], lp.TranslationUnit] | None = regenerate
        self._unit: lp.TranslationUnit | None = None
        self.facts = facts
        self.run = run

    def load(self) -> lp.TranslationUnit:
        """The translation unit (unpickled at the first call)."""
        if self._unit is None:
            try:
                unit = program_store.loads(self._data)
            except Exception as e:
                _logger.warning("program store: cannot read a unit (%s: %s), "
                                "generating it anew", type(e).__name__, e)
                assert self._regenerate is not None
                unit = self._regenerate()
            # (neither the bytes nor the graph of regenerate are needed now)
            self._unit, self._data, self._regenerate = unit, b"", None
        return self._unit

    def __reduce__(self) -> tuple[Any, ...]:
        return (_same, (self.load(),))


def _same(value: Any) -> Any:
    return value


def stored_unit(key: str, regenerate: Callable[[], lp.TranslationUnit], *,
                facts: bool = False, run: bool = False
                ) -> lp.TranslationUnit | StoredUnit | None:
    """The unit stored under *key* (the part ``"unit"``), or None if there
    is none: a :class:`StoredUnit` if the facts asked for (*facts*: its
    :class:`UnitFacts`; *run*: its :class:`RunFacts`) are stored with it,
    else the unit unpickled. *regenerate*: see :class:`StoredUnit`."""
    unit_facts = program_store.load(key, "unit-facts") if facts else None
    run_facts = program_store.load(key, "run-facts") if run else None
    if (facts and unit_facts is None) or (run and run_facts is None) \
            or not (facts or run):
        return program_store.load(key, "unit")  # type: ignore[no-any-return]
    data = program_store.load_data(key, "unit")
    if data is None:
        return None
    return StoredUnit(data, unit_facts, regenerate, run_facts)


def save_unit(key: str, t_unit: lp.TranslationUnit, *, facts: bool = False,
              run: bool = False) -> None:
    """Save *t_unit* in the program store under *key* (the part
    ``"unit"``), with the facts that :func:`stored_unit` reads."""
    program_store.save(key, "unit", t_unit)
    if facts:
        program_store.save(key, "unit-facts", unit_facts(t_unit))
    if run:
        summary = run_facts(t_unit)
        if summary is not None:
            program_store.save(key, "run-facts", summary)


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
