"""The loopy code generator, at the module path of the reference pytato.

The code lives in the lowering stage, :mod:`pytato.target.loopy.lower.graph`
and :mod:`pytato.target.loopy.lower.expressions`; this module re-exports
their public names, with
:func:`~pytato.target.loopy.generate_loopy` and
:func:`~pytato.codegen.normalize_outputs` where the reference has them.
"""

from __future__ import annotations

from pytato.codegen import normalize_outputs
from pytato.target.loopy import generate_loopy
from pytato.target.loopy.loopy_walk import UncachedLoopyWalkMapper
from pytato.target.loopy.lower.expressions import (
    ExpressionContext,
    NumpyMaxReductionOperation,
    NumpyMinReductionOperation,
    ScalarToLoopyMapper,
)
from pytato.target.loopy.lower.graph import (
    MAX_INDEX_GROWTH,
    MAX_INLINE_DEPTH,
    BoolValueArgResult,
    CodeGenMapper,
    CodeGenState,
    ImplementedResult,
    InlinedResult,
    MapperFactory,
    SizeParamResult,
    StoredResult,
    SubstitutionResult,
    build_translation_unit,
    get_stored_nodes,
    has_no_elements,
)


__all__ = [
    "MAX_INDEX_GROWTH", "MAX_INLINE_DEPTH", "BoolValueArgResult",
    "CodeGenMapper", "CodeGenState", "ExpressionContext", "ImplementedResult",
    "InlinedResult", "MapperFactory", "NumpyMaxReductionOperation",
    "NumpyMinReductionOperation", "ScalarToLoopyMapper", "SizeParamResult",
    "StoredResult", "SubstitutionResult", "UncachedLoopyWalkMapper",
    "build_translation_unit", "generate_loopy", "get_stored_nodes",
    "has_no_elements", "normalize_outputs",
]
