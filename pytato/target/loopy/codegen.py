"""The loopy code generator, at the module path of the reference pytato.

The code lives in the lowering stage, :mod:`pytato.target.loopy.lower.graph`;
this module re-exports its public names, with
:func:`~pytato.target.loopy.generate_loopy` and
:func:`~pytato.codegen.normalize_outputs` where the reference has them.
"""

from __future__ import annotations

from typing import Any

from pytato.target.loopy.lower.graph import (
    MAX_INDEX_GROWTH,
    MAX_INLINE_DEPTH,
    BoolValueArgResult,
    CodeGenMapper,
    CodeGenState,
    ImplementedResult,
    InlinedResult,
    SizeParamResult,
    StoredResult,
    SubstitutionResult,
    UncachedLoopyWalkMapper,
    build_translation_unit,
    get_stored_nodes,
    has_no_elements,
)


__all__ = [
    "MAX_INDEX_GROWTH", "MAX_INLINE_DEPTH", "BoolValueArgResult",
    "CodeGenMapper", "CodeGenState", "ImplementedResult", "InlinedResult",
    "SizeParamResult", "StoredResult", "SubstitutionResult",
    "UncachedLoopyWalkMapper", "build_translation_unit", "get_stored_nodes",
    "has_no_elements",
]


def __getattr__(name: str) -> Any:
    # imported on use: pytato.target.loopy imports the lowering stage
    if name == "generate_loopy":
        from pytato.target.loopy import generate_loopy
        return generate_loopy
    if name == "normalize_outputs":
        from pytato.codegen import normalize_outputs
        return normalize_outputs
    raise AttributeError(
        f"module 'pytato.target.loopy.codegen' has no attribute {name!r}")
