"""Combine mappers: a result per node, combined from its children's.

.. autoclass:: CombineMapper
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytato.array.base import Array, get_children
from pytato.array.inputs import SizeParam
from pytato.array.results import DictOfNamedArrays
from pytato.function import FunctionDefinition
from pytato.transform.base import CachedMapper, FunctionResultT, P, ResultT


if TYPE_CHECKING:
    from pytato.array import (
        AdvancedIndexInContiguousAxes,
        AdvancedIndexInNoncontiguousAxes,
        AxisPermutation,
        BasicIndex,
        Concatenate,
        DataWrapper,
        Einsum,
        IndexLambda,
        NamedArray,
        Placeholder,
        Reshape,
        Roll,
        Stack,
    )
    from pytato.array.remapping import IndexExpr
    from pytato.array.sparse import CSRMatmul, CSRMatrix
    from pytato.distributed.nodes import (
        DistributedRecv,
        DistributedSend,
        DistributedSendRefHolder,
    )
    from pytato.function import Call, NamedCallResult
    from pytato.loopy import LoopyCall, LoopyCallResult


__all__ = ["CombineMapper"]


# {{{ CombineMapper

class CombineMapper(CachedMapper[ResultT, FunctionResultT, P]):
    """Combines the results of the children with :meth:`combine`.

    .. automethod:: combine
    """

    def combine(self, *args: ResultT) -> ResultT:
        """Combine the results of the children of a node (possibly
        none)."""
        raise NotImplementedError

    def rec_idx_or_size_tuple(self, situp: tuple[IndexExpr, ...],
                              *args: P.args, **kwargs: P.kwargs
                              ) -> tuple[ResultT, ...]:
        """The results of the array entries of *situp* (a shape or an
        index tuple)."""
        return tuple(self.rec(s, *args, **kwargs)
                     for s in situp if isinstance(s, Array))

    def map_array(self, expr: Array, *args: P.args,
                  **kwargs: P.kwargs) -> ResultT:
        """The default of every array node type: :meth:`combine` of the
        children's results (the extra arguments passed on to them)."""
        rec = self.rec
        return self.combine(*(rec(k, *args, **kwargs)
                              for k in get_children(expr)))

    def map_index_lambda(self, expr: IndexLambda, *args: P.args,
                         **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_placeholder(self, expr: Placeholder, *args: P.args,
                        **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_data_wrapper(self, expr: DataWrapper, *args: P.args,
                         **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_size_param(self, expr: SizeParam, *args: P.args,
                       **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_stack(self, expr: Stack, *args: P.args,
                  **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_concatenate(self, expr: Concatenate, *args: P.args,
                        **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_roll(self, expr: Roll, *args: P.args,
                 **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_axis_permutation(self, expr: AxisPermutation, *args: P.args,
                             **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_reshape(self, expr: Reshape, *args: P.args,
                    **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_basic_index(self, expr: BasicIndex, *args: P.args,
                        **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_contiguous_advanced_index(
            self, expr: AdvancedIndexInContiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_einsum(self, expr: Einsum, *args: P.args,
                   **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_named_array(self, expr: NamedArray, *args: P.args,
                        **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_named_call_result(self, expr: NamedCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_loopy_call_result(self, expr: LoopyCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_csr_matmul(self, expr: CSRMatmul, *args: P.args,
                       **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_distributed_send_ref_holder(
            self, expr: DistributedSendRefHolder, *args: P.args,
            **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_distributed_recv(self, expr: DistributedRecv, *args: P.args,
                             **kwargs: P.kwargs) -> ResultT:
        return self.map_array(expr, *args, **kwargs)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays,
                                 *args: P.args, **kwargs: P.kwargs) -> ResultT:
        return self.combine(*(self.rec(v, *args, **kwargs)
                              for v in expr._data.values()))

    def map_distributed_send(self, expr: DistributedSend, *args: P.args,
                             **kwargs: P.kwargs) -> ResultT:
        return self.combine(self.rec(expr.data, *args, **kwargs))

    def map_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs
                                ) -> FunctionResultT:
        """Combine the results of the function's returned arrays, mapped by
        :meth:`~CachedMapper.clone_for_callee` (the body is a scope of its
        own: override this for analyses where that matters)."""
        mapper = self.clone_for_callee(expr)
        return self.combine(  # type: ignore[return-value]
            *(mapper(v, *args, **kwargs) for v in expr.returns.values()))

    def map_call(self, expr: Call, *args: P.args,
                 **kwargs: P.kwargs) -> ResultT:
        return self.combine(
            self.rec_function_definition(  # type: ignore[arg-type]
                expr.function, *args, **kwargs),
            *(self.rec(v, *args, **kwargs) for v in expr.bindings.values()))

    def map_loopy_call(self, expr: LoopyCall, *args: P.args,
                       **kwargs: P.kwargs) -> ResultT:
        return self.combine(*(self.rec(k, *args, **kwargs)
                              for k in get_children(expr)))

    def map_csr_matrix(self, expr: CSRMatrix, *args: P.args,
                       **kwargs: P.kwargs) -> ResultT:
        return self.combine(*(self.rec(k, *args, **kwargs)
                              for k in get_children(expr)))

# }}}
