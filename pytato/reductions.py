"""Reductions: the reduction operations and the reducing functions, under
the module names of the reference pytato.

The reduction operations (used by :class:`~pytato.scalar_expr.Reduce` in
the expressions of :class:`~pytato.array.IndexLambda`) are defined and
documented in :mod:`pytato.scalar_expr` and re-exported here:
:class:`~pytato.scalar_expr.ReductionOperation`,
:class:`~pytato.scalar_expr.SumReductionOperation`,
:class:`~pytato.scalar_expr.ProductReductionOperation`,
:class:`~pytato.scalar_expr.MaxReductionOperation`,
:class:`~pytato.scalar_expr.MinReductionOperation`,
:class:`~pytato.scalar_expr.AllReductionOperation` and
:class:`~pytato.scalar_expr.AnyReductionOperation`.

The reducing functions :func:`~pytato.sum`, :func:`~pytato.prod`,
:func:`~pytato.amax`, :func:`~pytato.amin`, :func:`~pytato.all` and
:func:`~pytato.any` are defined in :mod:`pytato.frontend.reductions` and
re-exported here (and from :mod:`pytato`).
"""

from __future__ import annotations

from pytato.frontend.reductions import all, amax, amin, any, prod, sum
from pytato.scalar_expr import (
    AllReductionOperation,
    AnyReductionOperation,
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    ReductionOperation,
    SumReductionOperation,
)


__all__ = [
    "AllReductionOperation",
    "AnyReductionOperation",
    "MaxReductionOperation",
    "MinReductionOperation",
    "ProductReductionOperation",
    "ReductionOperation",
    "SumReductionOperation",
    "all",
    "amax",
    "amin",
    "any",
    "prod",
    "sum",
]
