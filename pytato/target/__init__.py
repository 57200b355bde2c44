"""Code generation targets and the programs they produce.

A :class:`Target` turns generated code into a :class:`BoundProgram`: the
program together with the data (of :class:`~pytato.array.DataWrapper`
nodes) already bound to some of its arguments.

.. autoclass:: Target
.. autoclass:: BoundProgram
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


__all__ = ["BoundProgram", "Target"]


class Target:
    """An abstract code generation target.

    .. automethod:: bind_program
    """

    def bind_program(self, program: Any,
                     bound_arguments: Mapping[str, object]) -> BoundProgram:
        """Create a :class:`BoundProgram` for this target.

        :arg program: the generated program, in the representation of this
            target.
        :arg bound_arguments: a mapping from argument names to data bound
            to the program.
        """
        raise NotImplementedError


@dataclass(frozen=True, repr=False)
class BoundProgram:
    """A container for the result of code generation along with data
    bindings for already-bound arguments.

    .. attribute:: target

        The code generation target.

    .. attribute:: program

        Description of the program as per :attr:`target`.

    .. attribute:: bound_arguments

        A map from names to pre-bound kernel arguments.

    .. automethod:: copy
    """

    program: Any
    bound_arguments: Mapping[str, Any]
    target: Target

    def copy(self, **kwargs: Any) -> BoundProgram:
        """Return a copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(target={self.target!r}, "
                f"bound_arguments={sorted(self.bound_arguments)})")
