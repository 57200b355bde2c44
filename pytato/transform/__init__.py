"""Graph transforms: mapper bases and passes (graph -> graph).

The mapper classes: :mod:`pytato.transform.base` (dispatch, caches),
:mod:`pytato.transform.copy`, :mod:`pytato.transform.combine`,
:mod:`pytato.transform.walk` and :mod:`pytato.transform.gatherers`, all
re-exported by :mod:`pytato.transform.mappers` (upstream's path). Passes, one per
module: :mod:`pytato.transform.dead_code`, :mod:`pytato.transform.deduplicate`,
:mod:`pytato.transform.unify_axes`, :mod:`pytato.transform.einsum_rewrites`,
:mod:`pytato.transform.precompute`,
:mod:`pytato.transform.materialize`. Upstream's module names
(:mod:`pytato.transform.metadata`,
:mod:`pytato.transform.dead_code_elimination`,
:mod:`pytato.transform.einsum_distributive_law`,
:mod:`pytato.transform.remove_broadcasts_einsum`) re-export them.
"""

from __future__ import annotations

from pytato.equality import EqualityComparer
from pytato.function import install_input_replacer as _install_input_replacer

# (private, imported by code written for the reference pytato)
from pytato.transform.base import _verify_is_array
from pytato.transform.calls import replace_inputs as _replace_inputs
from pytato.transform.dead_code import DeadCodeEliminator, eliminate_dead_code
from pytato.transform.deduplicate import (
    DataWrapperDeduplicator,
    Deduplicator,
    deduplicate,
    deduplicate_data_wrappers,
)
from pytato.transform.einsum_rewrites import (
    EinsumBroadcastRemover,
    EinsumDistributor,
    apply_distributive_property_to_einsums,
    rewrite_einsums_with_no_broadcasts,
)
from pytato.transform.lower_to_index_lambda import (
    lower_to_index_lambdas,
    to_index_lambda,
)
from pytato.transform.mappers import (
    ArrayOrNames,
    ArrayOrNamesOrFunctionDefTc,
    ArrayOrNamesTc,
    CacheCollisionError,
    CachedMapAndCopyMapper,
    CachedMapper,
    CachedMapperCache,
    CachedWalkMapper,
    CacheInputsWithKey,
    CombineMapper,
    CopyMapper,
    CopyMapperWithExtraArgs,
    DependencyMapper,
    ForeignObjectError,
    InputGatherer,
    ListOfInputsGatherer,
    Mapper,
    MapperCreatedDuplicateError,
    SizeParamGatherer,
    SubsetDependencyMapper,
    TopoSortMapper,
    TransformMapper,
    TransformMapperCache,
    TransformMapperWithExtraArgs,
    UnsupportedArrayError,
    UsersCollector,
    WalkMapper,
    copy_dict_of_named_arrays,
    get_dependencies,
    get_users,
    map_and_copy,
    rec_get_user_nodes,
    topological_order,
)
from pytato.transform.materialize import materialize_with_mpms
from pytato.transform.precompute import precompute_subexpressions
from pytato.transform.unify_axes import AxisEquivalenceCollector, unify_axes_tags


# upstream's module names, attributes of this package as there
# isort: split
from pytato.transform import (
    dead_code_elimination,
    einsum_distributive_law,
    metadata,
    remove_broadcasts_einsum,
)


# The copy of a traced body with its captured inputs replaced (see
# :func:`pytato.function.install_input_replacer`): installed here, once, so
# that pytato.function, on whose nodes the transforms build, never imports
# them.
_install_input_replacer(_replace_inputs)


__all__ = [
    "ArrayOrNames",
    "ArrayOrNamesOrFunctionDefTc",
    "ArrayOrNamesTc",
    "AxisEquivalenceCollector",
    "CacheCollisionError",
    "CacheInputsWithKey",
    "CachedMapAndCopyMapper",
    "CachedMapper",
    "CachedMapperCache",
    "CachedWalkMapper",
    "CombineMapper",
    "CopyMapper",
    "CopyMapperWithExtraArgs",
    "DataWrapperDeduplicator",
    "DeadCodeEliminator",
    "Deduplicator",
    "DependencyMapper",
    "EinsumBroadcastRemover",
    "EinsumDistributor",
    "EqualityComparer",
    "ForeignObjectError",
    "InputGatherer",
    "ListOfInputsGatherer",
    "Mapper",
    "MapperCreatedDuplicateError",
    "SizeParamGatherer",
    "SubsetDependencyMapper",
    "TopoSortMapper",
    "TransformMapper",
    "TransformMapperCache",
    "TransformMapperWithExtraArgs",
    "UnsupportedArrayError",
    "UsersCollector",
    "WalkMapper",
    "apply_distributive_property_to_einsums",
    "copy_dict_of_named_arrays",
    "deduplicate",
    "deduplicate_data_wrappers",
    "eliminate_dead_code",
    "get_dependencies",
    "get_users",
    "lower_to_index_lambdas",
    "map_and_copy",
    "materialize_with_mpms",
    "precompute_subexpressions",
    "rec_get_user_nodes",
    "rewrite_einsums_with_no_broadcasts",
    "to_index_lambda",
    "topological_order",
    "unify_axes_tags",
]
