"""Names that the arrays of a :mod:`loopy` program may not take: the
keywords of the call of a program
(:meth:`~pytato.target.loopy.BoundPyOpenCLProgram.__call__`, which passes its
inputs as keyword arguments, and the host code that :mod:`loopy` generates
for it). An input named ``queue`` could not be passed at all (``got
multiple values for argument 'queue'``), one named ``allocator`` would be
taken for the allocator. :func:`~pytato.generate_loopy` refuses them.

.. autodata:: CALL_KEYWORDS
.. autofunction:: check_call_keyword_names
.. autofunction:: check_named_tag_name

The reference pytato's call has these keywords and ``entry``; arraycontext
names its inputs ``_actx_in_...``, so no client of the reference is
refused here.
"""

from __future__ import annotations

from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import NameClashError


__all__ = ["CALL_KEYWORDS", "check_call_keyword_names", "check_named_tag_name"]


CALL_KEYWORDS: frozenset[str] = frozenset(
    {"queue", "allocator", "wait_for", "out_host"})
"""The keywords of the call of a program, which no input, output or named
array may take as its name."""


def _listed() -> str:
    return ", ".join(sorted(CALL_KEYWORDS))


def check_call_keyword_names(outputs: DictOfNamedArrays) -> None:
    """Refuse inputs (placeholders, size parameters, named data wrappers)
    and outputs of *outputs* named like a keyword of the program's call.

    :raises pytato.diagnostic.NameClashError: naming the input or output.
    """
    inputs = outputs._pt_inputs
    for name in CALL_KEYWORDS:
        if name in inputs:
            raise NameClashError(
                f"input '{name}' ({type(inputs[name]).__name__}) has the name "
                f"of a keyword of the program's call ({_listed()}), so it "
                "could not be passed to it; rename the input")
        if name in outputs:
            raise NameClashError(
                f"output '{name}' has the name of a keyword of the program's "
                f"call ({_listed()}); rename the output")


def check_named_tag_name(name: str) -> None:
    """Refuse the name *name* of a :class:`~pytato.tags.Named` tag (of a
    data wrapper or a stored array) if it is a keyword of the program's
    call (the host code would take the array for that keyword).

    :raises pytato.diagnostic.NameClashError: naming the tag.
    """
    if name in CALL_KEYWORDS:
        raise NameClashError(
            f"an array is tagged Named('{name}'), the name of a keyword of "
            f"the program's call ({_listed()}); choose another name")
