"""Graph transforms: mapper bases and passes (graph -> graph).

See :mod:`pytato.transform.mappers` for the mapper classes.
"""

from __future__ import annotations

from pytato.transform.mappers import (
    CachedMapper,
    CachedWalkMapper,
    CombineMapper,
    CopyMapper,
    CopyMapperWithExtraArgs,
    DependencyMapper,
    InputGatherer,
    Mapper,
    SizeParamGatherer,
    WalkMapper,
    copy_dict_of_named_arrays,
    get_users,
    map_and_copy,
    topological_order,
)


__all__ = [
    "CachedMapper", "CachedWalkMapper", "CombineMapper", "CopyMapper",
    "CopyMapperWithExtraArgs", "DependencyMapper", "InputGatherer", "Mapper",
    "SizeParamGatherer", "WalkMapper", "copy_dict_of_named_arrays", "get_users",
    "map_and_copy", "topological_order",
]
