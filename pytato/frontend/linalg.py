"""Einstein summation and the products built on it.

:func:`einsum` parses numpy's subscript language into an
:class:`~pytato.array.Einsum`: each operand axis gets an
:class:`~pytato.array.EinsumElementwiseAxis` (indexed by an output axis) or
an :class:`~pytato.array.EinsumReductionAxis` (summed over). An index
repeated within one operand takes a diagonal (the same descriptor appears
twice in that operand's access descriptors); operand axes of length 1
broadcast against the other occurrences of their index, as in numpy.
:func:`matmul`, :func:`dot`, :func:`vdot` and :func:`outer` check their
operands' shapes (errors name the operands) and build einsums.

.. autofunction:: einsum
.. autofunction:: matmul
.. autofunction:: dot
.. autofunction:: vdot
.. autofunction:: outer
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pytato.array.base import Array, ArrayOrScalar, ReductionDescriptor
from pytato.array.lambdas import (
    Einsum,
    EinsumAxisDescriptor,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
)
from pytato.array.shape import (
    are_shape_components_equal,
    broadcast_shapes,
    format_shape,
    is_one,
    shape_component_to_expr,
)
from pytato.diagnostic import (
    EinsumSpecError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidEinsumIndex,
    ShapeMismatchError,
)
from pytato.frontend._coerce import as_array
from pytato.frontend.elementwise import is_operand, multiply
from pytato.frontend.math import conj
from pytato.frontend.shape_ops import ravel


if TYPE_CHECKING:
    from pytato.array.base import ShapeComponent


_ELLIPSIS = "..."


# {{{ einsum

def _ellipsis_index(i: int) -> str:
    """The internal name of the *i*-th (broadcast) ellipsis dimension."""
    return f"...{i}"


def _tokenize(spec: str, where: str, subscripts: str) -> list[str]:
    """Split one operand's (or the output's) subscript into letters and
    :data:`_ELLIPSIS`."""
    tokens: list[str] = []
    i = 0
    while i < len(spec):
        if spec.startswith(_ELLIPSIS, i):
            if _ELLIPSIS in tokens:
                raise EinsumSpecError(f"einsum {subscripts!r}: {where} has more "
                                      "than one ellipsis ('...')")
            tokens.append(_ELLIPSIS)
            i += len(_ELLIPSIS)
        elif spec[i] in string.ascii_letters:
            tokens.append(spec[i])
            i += 1
        else:
            raise InvalidEinsumIndex(f"einsum {subscripts!r}: invalid character "
                                  f"{spec[i]!r} in {where} ('{spec}'); use "
                                  "letters and '...'")
    return tokens


def _fmt_len(n: ShapeComponent) -> str:
    return str(shape_component_to_expr(n))


def _index_lengths(subscripts: str, specs: list[str],
                   indices: list[list[str]], args: tuple[Array, ...]
                   ) -> None:
    """Check that all occurrences of an index have compatible lengths:
    equal, or 1 (broadcast) in operands where it appears once."""
    length: dict[str, tuple[ShapeComponent, int]] = {}
    for k, (idxs, arg) in enumerate(zip(indices, args, strict=True)):
        own: dict[str, ShapeComponent] = {}
        for idx, n in zip(idxs, arg.shape, strict=True):
            name = "'...'" if idx.startswith(_ELLIPSIS) else f"'{idx}'"
            if idx in own and not are_shape_components_equal(own[idx], n):
                raise EinsumSpecError(
                    f"einsum {subscripts!r}: index {name} is repeated in "
                    f"operand {k} ('{specs[k]}', shape "
                    f"{format_shape(arg.shape)}) over axes of different "
                    f"lengths {_fmt_len(own[idx])} and {_fmt_len(n)}")
            own[idx] = n
            if is_one(n):
                continue
            if idx in length and not are_shape_components_equal(
                    length[idx][0], n):
                n0, k0 = length[idx]
                raise EinsumSpecError(
                    f"einsum {subscripts!r}: index {name} has length "
                    f"{_fmt_len(n0)} in operand {k0} ('{specs[k0]}', shape "
                    f"{format_shape(args[k0].shape)}) but length {_fmt_len(n)} "
                    f"in operand {k} ('{specs[k]}', shape "
                    f"{format_shape(arg.shape)})")
            length.setdefault(idx, (n, k))


def einsum(subscripts: str, *operands: object,
           index_to_redn_descr: Mapping[str, ReductionDescriptor] | None = None
           ) -> Einsum:
    """Einstein summation over *operands*, like :func:`numpy.einsum`.

    :arg subscripts: e.g. ``"ij,jk->ik"``. Without ``->``, the output
        indices are those appearing exactly once, in alphabetical order
        (after the ellipsis dimensions, if any). ``...`` stands for
        dimensions broadcast across operands.
    :arg index_to_redn_descr: maps reduction index letters to
        :class:`~pytato.array.ReductionDescriptor`\\ s (e.g. to tag the
        reduction); reductions not named get a fresh descriptor.
    :raises EinsumSpecError: naming the subscripts and the operand, for a
        wrong number of operands, subscripts that do not match an operand's
        dimension, inconsistent lengths of an index, output indices that are
        repeated or absent from the inputs, and malformed subscripts.
    """
    if not isinstance(subscripts, str):
        raise InvalidArgumentTypeError(f"'subscripts' must be a string, got "
                                       f"{type(subscripts).__name__}")
    spec = subscripts.replace(" ", "")
    if spec.count("->") > 1:
        raise EinsumSpecError(f"einsum {subscripts!r}: more than one '->'")
    lhs, arrow, rhs = spec.partition("->")
    in_specs = lhs.split(",")
    if len(in_specs) != len(operands):
        raise EinsumSpecError(
            f"einsum {subscripts!r}: the subscripts name {len(in_specs)} "
            f"operand(s), but {len(operands)} were given")
    args = tuple(as_array(op, f"operands[{k}]") for k, op in enumerate(operands))

    in_tokens = [_tokenize(s, f"operand {k}", subscripts)
                 for k, s in enumerate(in_specs)]
    n_ell_of = []
    for k, (toks, arg) in enumerate(zip(in_tokens, args, strict=True)):
        n_letters = sum(1 for t in toks if t != _ELLIPSIS)
        has_ell = _ELLIPSIS in toks
        if n_letters > arg.ndim or (not has_ell and n_letters != arg.ndim):
            raise EinsumSpecError(
                f"einsum {subscripts!r}: operand {k} has {arg.ndim} "
                f"dimension(s) (shape {format_shape(arg.shape)}), but its "
                f"subscript '{in_specs[k]}' names {n_letters}")
        n_ell_of.append(arg.ndim - n_letters if has_ell else 0)
    n_ell = max(n_ell_of, default=0)
    ell_indices = [_ellipsis_index(i) for i in range(n_ell)]

    def expand(toks: list[str], count: int) -> list[str]:
        result: list[str] = []
        for t in toks:
            if t == _ELLIPSIS:
                result.extend(ell_indices[n_ell - count:])
            else:
                result.append(t)
        return result

    indices = [expand(toks, c) for toks, c in zip(in_tokens, n_ell_of, strict=True)]
    letters = [t for toks in in_tokens for t in toks if t != _ELLIPSIS]

    if arrow:
        out_tokens = _tokenize(rhs, "the output", subscripts)
        for t in out_tokens:
            if t != _ELLIPSIS and t not in letters:
                raise EinsumSpecError(
                    f"einsum {subscripts!r}: output index '{t}' does not "
                    "appear in the operands' subscripts")
            if t != _ELLIPSIS and out_tokens.count(t) > 1:
                raise EinsumSpecError(
                    f"einsum {subscripts!r}: output index '{t}' is repeated")
        if n_ell and _ELLIPSIS not in out_tokens:
            raise EinsumSpecError(
                f"einsum {subscripts!r}: the operands have '...' dimensions, "
                "so the output must contain '...'")
        out_indices = expand(out_tokens, n_ell)
    else:
        out_indices = ell_indices + sorted(t for t in set(letters)
                                           if letters.count(t) == 1)

    _index_lengths(subscripts, in_specs, indices, args)

    descr: dict[str, EinsumAxisDescriptor] = {
        idx: EinsumElementwiseAxis(i) for i, idx in enumerate(out_indices)}
    for idxs in indices:
        for idx in idxs:
            if idx not in descr:
                descr[idx] = EinsumReductionAxis(
                    sum(1 for d in descr.values()
                        if isinstance(d, EinsumReductionAxis)))

    index_to_redn_descr = dict(index_to_redn_descr or {})
    for idx, rd in index_to_redn_descr.items():
        if not isinstance(descr.get(idx), EinsumReductionAxis):
            raise EinsumSpecError(
                f"einsum {subscripts!r}: 'index_to_redn_descr' names '{idx}', "
                "which is not a reduction index of the subscripts")
        if not isinstance(rd, ReductionDescriptor):
            raise InvalidArgumentTypeError(
                f"'index_to_redn_descr'['{idx}'] must be a "
                f"ReductionDescriptor, got {type(rd).__name__}")
    redn_descr = {
        d: index_to_redn_descr.get(idx, ReductionDescriptor())
        for idx, d in descr.items() if isinstance(d, EinsumReductionAxis)}

    return Einsum(
        tuple(tuple(descr[idx] for idx in idxs) for idxs in indices),
        args, redn_descr,
        {idx: d for idx, d in descr.items() if not idx.startswith(_ELLIPSIS)})

# }}}


# {{{ products

def _check_not_0d(a: Array, argname: str, what: str) -> None:
    if a.ndim == 0:
        raise ShapeMismatchError(f"{what}: '{argname}' must have at least one "
                                 "dimension, got a 0-d array")


def _check_contracted(a: Array, ia: int, b: Array, ib: int, what: str,
                      names: tuple[str, str] = ("x1", "x2")) -> None:
    if not are_shape_components_equal(a.shape[ia], b.shape[ib]):
        raise ShapeMismatchError(
            f"{what}: axis {ia % a.ndim} of '{names[0]}' (shape "
            f"{format_shape(a.shape)}) and axis {ib % b.ndim} of '{names[1]}' "
            f"(shape {format_shape(b.shape)}) differ in length "
            f"({_fmt_len(a.shape[ia])} != {_fmt_len(b.shape[ib])})")


def matmul(x1: object, x2: object) -> Array:
    """The matrix product ``x1 @ x2`` (:pep:`465`, :func:`numpy.matmul`):
    1-d operands are promoted to matrices (and the added axis removed from
    the result), leading axes broadcast as batch dimensions.

    :raises ShapeMismatchError: for 0-d operands, mismatching contracted
        axes, and batch shapes that do not broadcast.
    """
    x1 = as_array(x1, "x1")
    x2 = as_array(x2, "x2")
    _check_not_0d(x1, "x1", "matmul")
    _check_not_0d(x2, "x2", "matmul")
    _check_contracted(x1, -1, x2, 0 if x2.ndim == 1 else -2, "matmul")
    if x1.ndim == 1 and x2.ndim == 1:
        return einsum("i,i->", x1, x2)
    if x1.ndim == 1:
        return einsum("j,...jk->...k", x1, x2)
    if x2.ndim == 1:
        return einsum("...ij,j->...i", x1, x2)
    try:
        broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    except ShapeMismatchError:
        raise ShapeMismatchError(
            f"matmul: the batch dimensions of 'x1' (shape "
            f"{format_shape(x1.shape)}) and 'x2' (shape "
            f"{format_shape(x2.shape)}) do not broadcast") from None
    return einsum("...ij,...jk->...ik", x1, x2)


def dot(a: Any, b: Any) -> ArrayOrScalar:
    """The dot product with :func:`numpy.dot`'s semantics: a product if
    either operand is 0-d, the inner product of 1-d operands, the matrix
    product of 2-d operands, and otherwise a sum over the last axis of *a*
    and the second-to-last axis of *b* (the last, if *b* is 1-d).

    :raises ShapeMismatchError: if the contracted axes differ in length.
    """

    if not isinstance(a, Array) and not isinstance(b, Array) and (
            is_operand(a) and is_operand(b)):
        return np.dot(a, b)
    a = as_array(a, "a")
    b = as_array(b, "b")
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    ib = 0 if b.ndim == 1 else -2
    _check_contracted(a, -1, b, ib, "dot", ("a", "b"))
    letters = string.ascii_letters
    if a.ndim - 1 + b.ndim > len(letters):
        raise InvalidArgumentError("dot: too many dimensions")
    sa = letters[:a.ndim - 1]
    sb = letters[a.ndim - 1:a.ndim - 1 + b.ndim - 1]
    k = letters[a.ndim - 1 + b.ndim - 1]
    bidx = sb[:-1] + k + sb[-1:] if b.ndim > 1 else k
    return einsum(f"{sa}{k},{bidx}->{sa}{sb}", a, b)


def vdot(a: object, b: object) -> Array:
    """:func:`numpy.vdot`: the inner product of the flattened operands,
    conjugating *a* if it is complex.

    :raises ShapeMismatchError: if the operands differ in size.
    """

    a = ravel(as_array(a, "a"))
    b = ravel(as_array(b, "b"))
    if not are_shape_components_equal(a.shape[0], b.shape[0]):
        raise ShapeMismatchError(
            f"vdot: 'a' and 'b' must have the same size, got "
            f"{_fmt_len(a.shape[0])} and {_fmt_len(b.shape[0])}")
    if a.dtype.kind == "c":
        a = conj(a)
    return einsum("i,i->", a, b)


def outer(a: object, b: object) -> Array:
    """:func:`numpy.outer`: ``result[i, j] = a.ravel()[i] * b.ravel()[j]``."""

    return einsum("i,j->ij", ravel(as_array(a, "a")), ravel(as_array(b, "b")))

# }}}
