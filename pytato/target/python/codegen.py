"""Generation of Python source code for array graphs.

:class:`PythonCodeGenMapper` emits one assignment per computed node (shared
nodes are computed once) into a single function whose parameters are the
graph's inputs. Array operations are spelled in a numpy-like array module
whose name and conventions the target (:class:`~pytato.target.python.
PythonTarget`) provides, so one generator serves numpy and JAX.

.. autoclass:: ArgumentSpec
.. autoclass:: GeneratedPythonCode
.. autoclass:: PythonCodeGenMapper
.. autofunction:: generate_python_code
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytato.array.base import Array, GraphNode, get_children, topological_order
from pytato.array.inputs import DataWrapper, InputArgumentBase, Placeholder, SizeParam
from pytato.array.lambdas import Einsum, EinsumElementwiseAxis, IndexLambda
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    IndexBase,
    NormalizedSlice,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.results import DictOfNamedArrays, NamedArray
from pytato.array.shape import (
    are_shape_components_equal,
    is_one,
    shape_component_to_expr,
)
from pytato.codegen import (
    NameGenerator,
    check_distinct_input_names,
    tagged_data_name,
)
from pytato.diagnostic import (
    InvalidArgumentError,
    NameClashError,
    UnsupportedFeatureError,
)
from pytato.function import Call, NamedCallResult
from pytato.scalar_expr import is_integral_scalar
from pytato.tags import Named, PrefixNamed
from pytato.target.python.calls import (
    PythonCallsMixin,
    PythonFunctionCollector,
    _input_var_name,
)
from pytato.target.python.scalar_codegen import (
    LambdaCodeGenerator,
    SizeCodeMapper,
    dtype_code,
    is_safe_identifier,
)
from pytato.transform.mappers import CachedMapper


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression

    from pytato.array.base import ShapeComponent
    from pytato.array.lambdas import EinsumAxisDescriptor
    from pytato.array.remapping import IndexExpr
    from pytato.target.python.numpy_like import PythonTarget


_EINSUM_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class ArgumentSpec:
    """What the generated function expects for one input.

    .. attribute:: name

        The user-facing name of the argument.

    .. attribute:: var_name

        The parameter name in the generated function.

    .. attribute:: kind

        ``"placeholder"``, ``"size_param"`` or ``"data"`` (bound data).

    .. attribute:: shape

        The shape as integers and :mod:`pymbolic` expressions in size
        parameter names.

    .. attribute:: dtype
    """

    name: str
    var_name: str
    kind: str
    shape: tuple[ArithmeticExpression, ...]
    dtype: np.dtype[np.generic]


@dataclass(frozen=True)
class GeneratedPythonCode:
    """The result of :func:`generate_python_code`.

    .. attribute:: source
    .. attribute:: function_name
    .. attribute:: arg_specs

        A mapping from user-facing argument names to :class:`ArgumentSpec`,
        in parameter order.

    .. attribute:: bound_arguments

        The (target-converted) data of :class:`~pytato.array.DataWrapper`
        nodes by argument name.
    """

    source: str
    function_name: str
    arg_specs: Mapping[str, ArgumentSpec]
    bound_arguments: Mapping[str, Any]


def _data_children(node: GraphNode) -> tuple[GraphNode, ...]:
    """The nodes whose *values* computing *node* needs (not those only
    appearing in its shape)."""
    if isinstance(node, IndexLambda):
        return tuple(node.bindings.values())
    if isinstance(node, Einsum):
        return node.args
    if isinstance(node, (Stack, Concatenate)):
        return node.arrays
    if isinstance(node, IndexBase):
        return (node.array, *(i for i in node.indices if isinstance(i, Array)))
    if isinstance(node, (Roll, AxisPermutation, Reshape)):
        return (node.array,)
    if isinstance(node, InputArgumentBase):
        return ()
    if isinstance(node, NamedCallResult):
        return (node._container,)
    if isinstance(node, Call):
        fdef = node.function
        return tuple(b for name, b in node.bindings.items()
                     if isinstance(fdef.get_placeholder(name), Placeholder))
    if isinstance(node, NamedArray):
        if isinstance(node._container, DictOfNamedArrays):
            return (node._container[node.name],)
        return ()  # map_named_array reports the unsupported container
    return get_children(node)


def _needed_nodes(roots: list[GraphNode]) -> set[int]:
    """Ids of the nodes whose values are needed to compute *roots*."""
    needed = {id(r) for r in roots}
    stack = list(roots)
    while stack:
        node = stack.pop()
        for k in _data_children(node):
            if id(k) not in needed:
                needed.add(id(k))
                stack.append(k)
    return needed


class PythonCodeGenMapper(PythonCallsMixin, CachedMapper[str, None, []]):
    """Emits Python statements computing each node; ``rec(node)`` returns
    the name of the variable holding the node's value.

    .. attribute:: lines

        The statements of the function body, in order.

    .. attribute:: functions

        The :class:`~pytato.target.python.calls.PythonFunctionCollector`
        gathering the functions generated for calls (shared by the mappers
        of all functions of one module).
    """

    def generate_body(self, roots: list[Array]) -> list[str]:
        """Emit the statements computing *roots* (see
        :func:`generate_body`); return the variables holding them."""
        return generate_body(self, roots)

    def __init__(self, target: PythonTarget,
                 input_var_names: Mapping[str, str],
                 data_names: Mapping[DataWrapper, str], *,
                 functions: PythonFunctionCollector | None = None) -> None:
        super().__init__()
        self.functions = (PythonFunctionCollector(set()) if functions is None
                          else functions)
        self.data_names = data_names
        self.target = target
        self.np = target.array_module_name
        self.input_var_names = input_var_names
        self.lines: list[str] = []
        self.used_names: set[str] = set(input_var_names.values())
        self._counters: dict[str, int] = {}

    # {{{ naming

    def fresh_name(self, prefix: str) -> str:
        while True:
            k = self._counters.get(prefix, 0)
            self._counters[prefix] = k + 1
            name = f"{prefix}{k}"
            if name not in self.used_names:
                self.used_names.add(name)
                return name

    def _assign(self, node: Array, code: str) -> str:
        named = node.tags_of_type(Named)
        prefixed = node.tags_of_type(PrefixNamed)
        if named:
            name = next(iter(named)).name
            if name in self.used_names or not is_safe_identifier(name):
                raise NameClashError(
                    f"Named('{name}') cannot be used as a variable name in "
                    "generated code: it is taken or shadows a Python name")
            self.used_names.add(name)
        elif prefixed:
            name = self.fresh_name(next(iter(prefixed)).prefix)
        else:
            name = self.fresh_name("_pt_tmp")
        self.lines.append(f"{name} = {code}")
        return name

    def size_code(self, c: ShapeComponent | ArithmeticExpression) -> str:
        """Code for a shape component (or integer expression)."""
        e = shape_component_to_expr(c) if isinstance(c, Array) else c
        return SizeCodeMapper(lambda n: self.input_var_names[n])(e)

    def shape_code(self, shape: tuple[ShapeComponent, ...]) -> str:
        comps = [self.size_code(c) for c in shape]
        return "(" + ", ".join(comps) + ("," if len(comps) == 1 else "") + ")"

    def _cast(self, code: str, dtype: np.dtype[np.generic]) -> str:
        return f"{self.np}.asarray({code}, dtype={dtype_code(self.np, dtype)})"

    # }}}

    # {{{ inputs

    def map_placeholder(self, expr: Placeholder) -> str:
        return self.input_var_names[expr.name]

    def map_size_param(self, expr: SizeParam) -> str:
        return self.input_var_names[expr.name]

    def map_data_wrapper(self, expr: DataWrapper) -> str:
        return self.input_var_names[self.data_names[expr]]

    # }}}

    def map_index_lambda(self, expr: IndexLambda) -> str:
        binding_code = {name: self.rec(b) for name, b in expr.bindings.items()}
        gen = LambdaCodeGenerator(
            expr, self.np, binding_code,
            lambda n: self.input_var_names[n], self.fresh_name)
        code = gen.generate()
        self.lines.extend(gen.statements)
        return self._assign(expr, code)

    def map_einsum(self, expr: Einsum) -> str:
        letters: dict[EinsumAxisDescriptor, str] = {}
        for i in range(expr.ndim):
            letters[EinsumElementwiseAxis(i)] = _EINSUM_LETTERS[i]
        for j, ax in enumerate(expr.reduction_axes):
            letters[ax] = _EINSUM_LETTERS[expr.ndim + j]
        operands = []
        subscripts = []
        for acc, arg in zip(expr.access_descriptors, expr.args, strict=True):
            code = self.rec(arg)
            sub = ""
            idx = []
            for descr, n in zip(acc, arg.shape, strict=True):
                # a unit axis broadcast against a longer one does not depend
                # on its index: drop it
                if is_one(n) and not is_one(expr._axis_length(descr)):
                    idx.append("0")
                else:
                    idx.append(":")
                    sub += letters[descr]
            if "0" in idx:
                code = f"{code}[{', '.join(idx)}]"
            operands.append(code)
            subscripts.append(sub)
        spec = (",".join(subscripts) + "->"
                + "".join(_EINSUM_LETTERS[i] for i in range(expr.ndim)))
        code = f"{self.np}.einsum({spec!r}, {', '.join(operands)})"
        if len({a.dtype for a in expr.args}) > 1:
            code = self._cast(code, expr.dtype)
        return self._assign(expr, code)

    def _join(self, func: str, expr: Stack | Concatenate) -> str:
        arrays = ", ".join(self.rec(a) for a in expr.arrays)
        code = f"{self.np}.{func}([{arrays}], axis={expr.axis})"
        if len({a.dtype for a in expr.arrays}) > 1:
            code = self._cast(code, expr.dtype)
        return self._assign(expr, code)

    def map_stack(self, expr: Stack) -> str:
        return self._join("stack", expr)

    def map_concatenate(self, expr: Concatenate) -> str:
        return self._join("concatenate", expr)

    def map_roll(self, expr: Roll) -> str:
        return self._assign(expr, f"{self.np}.roll({self.rec(expr.array)}, "
                                  f"{expr.shift}, axis={expr.axis})")

    def map_axis_permutation(self, expr: AxisPermutation) -> str:
        return self._assign(expr, f"{self.np}.transpose({self.rec(expr.array)}, "
                                  f"{tuple(expr.axis_permutation)!r})")

    def map_reshape(self, expr: Reshape) -> str:
        return self._assign(expr, f"{self.np}.reshape({self.rec(expr.array)}, "
                                  f"{self.shape_code(expr.newshape)}, "
                                  f"order={expr.order!r})")

    def _index_code(self, idx: IndexExpr, length: ShapeComponent) -> str:
        if isinstance(idx, NormalizedSlice):
            if idx.step > 0:
                start = ("" if is_integral_scalar(idx.start)
                         and int(idx.start) == 0 else self.size_code(idx.start))
                stop = ("" if are_shape_components_equal(idx.stop, length)
                        else self.size_code(idx.stop))
            else:
                start = ("" if are_shape_components_equal(
                    idx.start + 1, length)
                         else self.size_code(idx.start))
                stop = ("" if is_integral_scalar(idx.stop) and int(idx.stop) < 0
                        else self.size_code(idx.stop))
            step = "" if idx.step == 1 else f":{idx.step}"
            return f"{start}:{stop}{step}"
        if isinstance(idx, Array):
            # the policy of the OpenCL target: negative entries count from
            # the end once, the rest is clamped to the axis. The entries
            # are converted to int64 first: in their own type, n - 1 or
            # an entry + n may not be representable (an OverflowError for
            # an unsigned index into an empty axis); uint64 entries are
            # clamped before (they need not fit int64)
            n = self.size_code(length)
            code = self.rec(idx)
            int64 = dtype_code(self.np, np.dtype(np.int64))
            if idx.dtype.kind == "u" and idx.dtype.itemsize == 8:
                uint64 = dtype_code(self.np, idx.dtype)
                code = (f"{self.np}.minimum({code}, {uint64}(max(({n}) - 1, 0)))"
                        f".astype({int64})")
            elif idx.dtype.itemsize < 8 and not (
                    idx.dtype == np.int32 and is_integral_scalar(length)
                    and int(length) < 2**31):
                code = f"({code}).astype({int64})"
            if idx.dtype.kind != "u":
                code = f"{self.np}.where({code} < 0, {code} + ({n}), {code})"
            return f"{self.np}.clip({code}, 0, ({n}) - 1)"
        return self.size_code(idx)

    def _map_index(self, expr: IndexBase) -> str:
        if not expr.indices:
            return self._assign(expr, self.rec(expr.array))
        parts = ", ".join(
            self._index_code(i, n)
            for i, n in zip(expr.indices, expr.array.shape, strict=True))
        return self._assign(expr, f"{self.rec(expr.array)}[{parts}]")

    def map_basic_index(self, expr: BasicIndex) -> str:
        return self._map_index(expr)

    def map_contiguous_advanced_index(self, expr: AdvancedIndexInContiguousAxes
                                      ) -> str:
        return self._map_index(expr)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes) -> str:
        return self._map_index(expr)

    def map_named_array(self, expr: NamedArray) -> str:
        if isinstance(expr._container, DictOfNamedArrays):
            return self.rec(expr._container._data[expr.name])
        raise UnsupportedFeatureError(
            f"{type(expr._container).__name__} results cannot be generated as "
            "Python code")

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> None:
        return None


def generate_body(mapper: PythonCodeGenMapper, roots: list[Array]) -> list[str]:
    """Emit into *mapper* the statements computing *roots* (and only the
    nodes whose values they need); return the variables holding them."""
    needed = _needed_nodes(list(roots))
    for node in topological_order(roots):
        if id(node) in needed:
            mapper.rec(node)
    return [mapper.rec(r) for r in roots]


def generate_python_code(outputs: DictOfNamedArrays, target: PythonTarget, *,
                         function_name: str = "_pt_kernel",
                         single_output: str | None = None,
                         jit: bool = False) -> GeneratedPythonCode:
    """Generate the Python source of a function computing *outputs*.

    :arg single_output: if given, the function returns that output alone
        rather than a dict.
    :arg jit: whether the target should just-in-time compile the function
        (see :meth:`~pytato.target.python.PythonTarget.decorators`).
    """
    if not function_name.isidentifier():
        raise InvalidArgumentError(f"'function_name' must be an identifier, got "
                                   f"{function_name!r}")
    check_distinct_input_names(outputs)
    order = topological_order([outputs])

    # {{{ inputs: parameters of the function

    specs: dict[str, ArgumentSpec] = {}
    data_names: dict[DataWrapper, str] = {}
    bound: dict[str, object] = {}
    ndata = 0
    inputs: list[tuple[str, InputArgumentBase]] = []
    taken = NameGenerator(
        set(outputs._pt_inputs) | set(outputs))
    for node in order:
        if isinstance(node, (Placeholder, SizeParam)):
            inputs.append((node.name, node))
        elif isinstance(node, DataWrapper) and node not in data_names:
            if node.name is not None:
                name = node.name
            else:
                name = tagged_data_name(node, taken) or f"_pt_data{ndata}"
                if name == f"_pt_data{ndata}":
                    ndata += 1
            data_names[node] = name
            inputs.append((name, node))
    used: set[str] = {target.array_module_name, function_name}
    for name, node in sorted(inputs, key=lambda x: x[0]):
        if name in specs:
            continue
        kind = ("placeholder" if isinstance(node, Placeholder) else
                "size_param" if isinstance(node, SizeParam) else "data")
        specs[name] = ArgumentSpec(
            name, _input_var_name(name, used), kind,
            tuple(shape_component_to_expr(c) for c in node.shape), node.dtype)
        if isinstance(node, DataWrapper):
            bound[name] = target.convert_bound_argument(node.data)

    # }}}

    functions = PythonFunctionCollector(
        used | {s.var_name for s in specs.values()})
    mapper = PythonCodeGenMapper(
        target, {name: s.var_name for name, s in specs.items()}, data_names,
        functions=functions)
    result_vars = generate_body(mapper, list(outputs._data.values()))
    results = {name: target.output_code(var, ary.dtype)
               for (name, ary), var in zip(outputs._data.items(), result_vars,
                                           strict=True)}
    if single_output is not None:
        ret = results[single_output]
    else:
        ret = "{" + ", ".join(f"{k!r}: {v}" for k, v in results.items()) + "}"

    params = ", ".join(s.var_name for s in specs.values())
    body = [*mapper.lines, f"return {ret}"]
    decorators = "".join(f"@{d}\n" for d in target.decorators(specs, jit))
    source = (target.preamble(jit) + "\n\n\n"
              + "".join(block + "\n\n" for block in functions.blocks)
              + decorators + f"def {function_name}({params}):\n"
              + "".join(f"    {line}\n" for line in body))
    return GeneratedPythonCode(source, function_name, specs, bound)


__all__ = [
    "ArgumentSpec",
    "GeneratedPythonCode",
    "PythonCodeGenMapper",
    "generate_body",
    "generate_python_code",
]
