"""The mapper classes, at the path where upstream pytato has them.

The classes live in one module per family and are re-exported here (and
from :mod:`pytato.transform`):

- :mod:`pytato.transform.base`: :class:`~pytato.transform.base.Mapper`,
  the caches, :class:`~pytato.transform.base.CachedMapper`, the errors and
  the type aliases,
- :mod:`pytato.transform.copy`: transform and copy mappers,
  :func:`~pytato.transform.copy.map_and_copy`,
- :mod:`pytato.transform.combine`:
  :class:`~pytato.transform.combine.CombineMapper`,
- :mod:`pytato.transform.walk`: walk mappers and the topological order,
- :mod:`pytato.transform.gatherers`: dependency, input and user gatherers.
"""

from __future__ import annotations

from pytato.transform.base import (
    ArrayOrNames,
    ArrayOrNamesOrDictTc,
    ArrayOrNamesOrFunctionDefTc,
    ArrayOrNamesTc,
    CacheCollisionError,
    CachedMapper,
    CachedMapperCache,
    CacheInputsWithKey,
    ForeignObjectError,
    Mapper,
    MapperCreatedDuplicateError,
    TransformMapperCache,
    UnsupportedArrayError,
    UnsupportedNodeError,
)
from pytato.transform.combine import CombineMapper
from pytato.transform.copy import (
    CachedMapAndCopyMapper,
    CopyMapper,
    CopyMapperWithExtraArgs,
    TransformMapper,
    TransformMapperWithExtraArgs,
    copy_dict_of_named_arrays,
    map_and_copy,
)
from pytato.transform.gatherers import (
    DependencyMapper,
    InputGatherer,
    ListOfInputsGatherer,
    SizeParamGatherer,
    SubsetDependencyMapper,
    UsersCollector,
    get_dependencies,
    get_users,
    rec_get_user_nodes,
)
from pytato.transform.walk import (
    CachedWalkMapper,
    TopoSortMapper,
    WalkMapper,
    topological_order,
)


__all__ = [
    "ArrayOrNames", "ArrayOrNamesOrDictTc", "ArrayOrNamesOrFunctionDefTc",
    "ArrayOrNamesTc",
    "CacheCollisionError", "CacheInputsWithKey", "CachedMapAndCopyMapper",
    "CachedMapper", "CachedMapperCache", "CachedWalkMapper", "CombineMapper",
    "CopyMapper", "CopyMapperWithExtraArgs", "DependencyMapper",
    "ForeignObjectError", "InputGatherer", "ListOfInputsGatherer", "Mapper",
    "MapperCreatedDuplicateError", "SizeParamGatherer", "SubsetDependencyMapper",
    "TopoSortMapper", "TransformMapper", "TransformMapperCache",
    "TransformMapperWithExtraArgs", "UnsupportedArrayError",
    "UnsupportedNodeError", "UsersCollector", "WalkMapper",
    "copy_dict_of_named_arrays", "get_dependencies", "get_users",
    "map_and_copy", "rec_get_user_nodes", "topological_order",
]
