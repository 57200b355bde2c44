"""Recognizing einsums by their subscripts.

.. autofunction:: is_einsum_similar_to_subscript
"""

from __future__ import annotations

from pytato.array.lambdas import (
    Einsum,
    EinsumAxisDescriptor,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
)
from pytato.diagnostic import EinsumSpecError, InvalidArgumentTypeError


__all__ = ["is_einsum_similar_to_subscript"]


def _parse_subscripts(subscripts: str) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise EinsumSpecError(f"'subscripts'={subscripts!r}: ellipses are not "
                              "supported here")
    if "->" in spec:
        in_spec, out_spec = spec.split("->")
    else:
        in_spec = spec
        letters = in_spec.replace(",", "")
        out_spec = "".join(sorted(c for c in set(letters)
                                  if letters.count(c) == 1))
    operands = in_spec.split(",")
    for part in [*operands, out_spec]:
        if not all(c.isalpha() for c in part):
            raise EinsumSpecError(f"'subscripts'={subscripts!r}: indices must "
                                  f"be letters, got {part!r}")
    if len(set(out_spec)) != len(out_spec):
        raise EinsumSpecError(f"'subscripts'={subscripts!r}: repeated output "
                              "index")
    if not set(out_spec) <= set("".join(operands)):
        raise EinsumSpecError(f"'subscripts'={subscripts!r}: output index not "
                              "in any operand")
    return operands, out_spec


def is_einsum_similar_to_subscript(expr: Einsum, subscripts: str) -> bool:
    """Whether *expr* computes ``numpy.einsum(subscripts, *expr.args)``, up
    to a renaming of the reduction indices.

    :arg subscripts: an einsum specification such as ``"ij,jk->ik"`` (without
        ellipses; without ``->`` numpy's implicit output is used).
    :raises EinsumSpecError: if *subscripts* is malformed.
    """
    if not isinstance(expr, Einsum):
        raise InvalidArgumentTypeError(
            f"'expr' must be an Einsum, got {type(expr).__name__}")
    operands, out_spec = _parse_subscripts(subscripts)
    if len(operands) != len(expr.args):
        return False
    out_index = {c: i for i, c in enumerate(out_spec)}
    letter_to_descr: dict[str, EinsumAxisDescriptor] = {}
    descr_to_letter: dict[EinsumAxisDescriptor, str] = {}
    for spec, acc in zip(operands, expr.access_descriptors, strict=True):
        if len(spec) != len(acc):
            return False
        for c, d in zip(spec, acc, strict=True):
            if c in out_index:
                if d != EinsumElementwiseAxis(out_index[c]):
                    return False
            elif not isinstance(d, EinsumReductionAxis):
                return False
            if letter_to_descr.setdefault(c, d) != d:
                return False
            if descr_to_letter.setdefault(d, c) != c:
                return False
    return len(out_spec) == expr.ndim
