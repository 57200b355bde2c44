"""Functions in array graphs: definitions, calls and tracing.

A :class:`FunctionDefinition` is an array graph over *parameters*
(placeholders and size parameters) with named *returns*. A :class:`Call`
binds the parameters to arrays of the caller's graph; its results are
:class:`NamedCallResult` arrays. Graph mappers visit a function's body once
per definition however many calls it has (see
:mod:`pytato.transform.mappers`), and the loopy target generates one callee
kernel per definition (see :mod:`pytato.target.loopy.lower.calls`), unless the
call is tagged :class:`~pytato.tags.InlineCallTag` (see
:func:`pytato.transform.calls.inline_calls`).

:func:`trace_call` builds definitions by running a Python function on
placeholders.

Scoping: a function body may only refer to its parameters. Size
parameters in the body are parameters too; :func:`trace_call` binds them
to the caller's size parameters of the same name. Inputs that the traced
function captures from the enclosing scope (placeholders, data wrappers)
become extra parameters ``_pt_capture_<k>`` bound to the captured arrays,
so that the body is the same for every call site. The copy of the body
with those inputs replaced is a graph transform: graph transforms build on
the nodes defined here, so this module does not import them;
:mod:`pytato.transform` installs it (:func:`install_input_replacer`), as
:mod:`pytato.frontend` attaches :class:`~pytato.array.base.Array`'s
methods.

.. autoclass:: ReturnType
.. autoclass:: FunctionDefinition
.. autoclass:: Call
.. autoclass:: NamedCallResult
.. autofunction:: trace_call
.. autofunction:: install_input_replacer
"""

from __future__ import annotations

import dataclasses
import enum
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np
import pymbolic
from constantdict import constantdict
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    ShapeComponent,
    ShapeType,
    _TaggableMixin,
    array_dataclass,
    check_unique_tags,
    normalize_tags,
    topological_order,
)
from pytato.array.inputs import DataWrapper, InputArgumentBase, Placeholder, SizeParam
from pytato.array.nonarray import DataclassGraphNode
from pytato.array.results import AbstractResultWithNamedArrays, NamedArray
from pytato.array.shape import are_shapes_equal, format_shape, shape_component_to_expr
from pytato.diagnostic import (
    CallBindingError,
    DTypeError,
    FunctionTracingError,
    InvalidArgumentTypeError,
    InvalidKeyError,
    ShapeMismatchError,
)
from pytato.equality import EqualityComparer
from pytato.scalar_expr import get_dependencies
from pytato.tags import FunctionIdentifier  # re-exported, as upstream


__all__ = [
    "Call", "FunctionDefinition", "FunctionIdentifier", "NamedCallResult",
    "ReturnType", "install_input_replacer", "trace_call",
]


class ReturnType(enum.Enum):
    """What the traced function returned: a single array (result name
    ``"_"``), a tuple of arrays (``"_0"``, ``"_1"``, ...) or a dict of
    arrays (its keys)."""

    ARRAY = 0
    TUPLE_OF_ARRAYS = 1
    DICT_OF_ARRAYS = 2


# {{{ shape substitution

def substitute_sizes(shape: ShapeType,
                     values: Mapping[str, ShapeComponent]) -> ShapeType:
    """*shape* with size parameters replaced by *values* (ints or 0-d
    integer arrays); names not in *values* stay."""
    if not values:
        return shape

    result: list[ShapeComponent] = []
    for c in shape:
        if isinstance(c, Array):
            expr = shape_component_to_expr(c)
            deps = get_dependencies(expr)
            if not deps & set(values):
                result.append(c)
                continue
            context: dict[str, Any] = {}
            inputs = c._pt_inputs
            for name in deps:
                # (the size parameters kept are the same objects: a new
                # one of the same name would clash with them)
                if name in values:
                    context[name] = values[name]
                else:
                    kept = inputs.get(name)
                    context[name] = SizeParam(name) if kept is None else kept
            c = pymbolic.evaluate(expr, context)
            if isinstance(c, (int, np.integer)):
                c = int(c)
        result.append(c)
    return tuple(result)


def _is_size_expression(ary: object) -> bool:
    return (isinstance(ary, Array) and ary.shape == ()
            and ary.dtype.kind in "iu"
            and all(isinstance(i, SizeParam)
                    for i in ary._pt_inputs.values())
            and not any(isinstance(n, (Placeholder, DataWrapper))
                        for n in topological_order([ary])))

# }}}


# {{{ function definition

@dataclass(frozen=True, eq=False, repr=False)
class FunctionDefinition(_TaggableMixin):
    r"""A function: an array graph over :attr:`parameters` with named
    :attr:`returns`. Equality is structural; the hash is cached.

    .. attribute:: parameters

        A :class:`frozenset` of the names of the parameters: the
        :class:`~pytato.array.Placeholder`\ s and
        :class:`~pytato.array.SizeParam`\ s the body may refer to.

    .. attribute:: return_type

        A :class:`ReturnType`.

    .. attribute:: returns

        A mapping from result names to the :class:`~pytato.Array`\ s
        returned.

    .. attribute:: tags

    .. autoattribute:: identifier
    .. automethod:: get_placeholder
    """

    parameters: frozenset[str]
    return_type: ReturnType
    returns: Mapping[str, Array]
    tags: frozenset[Tag] = frozenset()

    _mapper_method: ClassVar[str] = "map_function_definition"

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        if not isinstance(self.parameters, frozenset):
            setattr_(self, "parameters", frozenset(self.parameters))
        if not isinstance(self.returns, constantdict):
            setattr_(self, "returns", constantdict(self.returns))
        setattr_(self, "tags", check_unique_tags(normalize_tags(self.tags),
                                                 "FunctionDefinition"))
        if not isinstance(self.return_type, ReturnType):
            raise InvalidArgumentTypeError("'return_type' must be a ReturnType, got "
                                           f"{self.return_type!r}")
        if not self.returns:
            raise FunctionTracingError(
                f"function '{self.identifier}' returns nothing")
        for name, ary in self.returns.items():
            if not isinstance(ary, Array):
                raise FunctionTracingError(
                    f"function '{self.identifier}': return value '{name}' is "
                    f"not an array but a {type(ary).__name__}")
        self._check_inputs()
        setattr_(self, "_pt_hash", hash((
            "FunctionDefinition", self.parameters, self.return_type,
            tuple(self.returns.items()), self.tags)))

    def _check_inputs(self) -> None:
        params: dict[str, Placeholder | SizeParam] = {}
        for node in topological_order(self.returns.values()):
            if isinstance(node, (Placeholder, SizeParam)):
                if node.name not in self.parameters:
                    raise FunctionTracingError(
                        f"function '{self.identifier}': its body refers to "
                        f"input '{node.name}', which is not a parameter "
                        f"(parameters: {', '.join(sorted(self.parameters))})")
                params[node.name] = node
            elif isinstance(node, InputArgumentBase):
                raise FunctionTracingError(
                    f"function '{self.identifier}': its body holds a "
                    f"{type(node).__name__}; only parameters (placeholders "
                    "and size parameters) are allowed (trace_call turns "
                    "captured data into parameters)")
        object.__setattr__(self, "_pt_param_nodes", params)

    if TYPE_CHECKING:
        # (set at construction)
        @property
        def _pt_param_nodes(self) -> Mapping[str, Placeholder | SizeParam]: ...

        @property
        def _pt_hash(self) -> int: ...

    @property
    def identifier(self) -> Hashable:
        """The identifier given by a :class:`FunctionIdentifier` tag, else
        ``"function"``."""
        ids = self.tags_of_type(FunctionIdentifier)
        return next(iter(ids)).identifier if ids else "function"

    def get_placeholder(self, name: str) -> Placeholder | SizeParam | None:
        """The input node of the body named *name*, or *None* if the
        parameter is not used by the body."""
        return self._pt_param_nodes.get(name)

    def __hash__(self) -> int:
        return self._pt_hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, FunctionDefinition):
            return False
        if (self._pt_hash != other._pt_hash
                or self.parameters != other.parameters
                or self.return_type != other.return_type
                or self.tags != other.tags
                or list(self.returns) != list(other.returns)):
            return False
        cmp = EqualityComparer()
        return all(cmp(self.returns[k], other.returns[k]) for k in self.returns)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __reduce__(self) -> tuple[type[FunctionDefinition], tuple[object, ...]]:
        return (FunctionDefinition, (self.parameters, self.return_type,
                                     dict(self.returns), self.tags))

    def __repr__(self) -> str:
        return (f"FunctionDefinition(identifier={self.identifier!r}, "
                f"parameters={sorted(self.parameters)}, "
                f"returns={list(self.returns)})")

    def copy(self, **kwargs: Any) -> FunctionDefinition:
        """A copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)

    def __call__(self, **bindings: Array
                 ) -> Array | tuple[Array, ...] | Mapping[str, Array]:
        """Call *self* with *bindings* and return the results as the traced
        function returned them (see :attr:`return_type`): a
        :class:`NamedCallResult` for :attr:`ReturnType.ARRAY`, a tuple of
        them for :attr:`ReturnType.TUPLE_OF_ARRAYS`, and a
        :class:`constantdict.constantdict` from result names to them for
        :attr:`ReturnType.DICT_OF_ARRAYS`. All are results of one
        :class:`Call`, reachable as ``result.call``."""
        return _call_results(Call(self, bindings))

# }}}


# {{{ call

@dataclass(frozen=True, eq=False, repr=False)
class Call(DataclassGraphNode, AbstractResultWithNamedArrays):
    r"""A call of :attr:`function` with :attr:`bindings`: a mapping from the
    names of the function's results to :class:`NamedCallResult`\ s.

    .. attribute:: function

        The :class:`FunctionDefinition`.

    .. attribute:: bindings

        A mapping from each parameter name to an :class:`~pytato.Array` of
        the caller's graph (a 0-d integer size expression for size
        parameters).

    .. attribute:: tags
    """

    function: FunctionDefinition
    bindings: Mapping[str, Array]
    tags: frozenset[Tag] = frozenset()

    _mapper_method: ClassVar[str] = "map_call"

    def _pt_validate(self) -> None:
        setattr_ = object.__setattr__
        if not isinstance(self.function, FunctionDefinition):
            raise InvalidArgumentTypeError(
                "'function' must be a FunctionDefinition, got "
                f"{type(self.function).__name__}")
        setattr_(self, "bindings", constantdict(
            {k: self.bindings[k] for k in sorted(self.bindings)}))
        setattr_(self, "tags", check_unique_tags(normalize_tags(self.tags),
                                                 "Call"))
        _check_bindings(self.function, self.bindings)

    def _pt_finish(self) -> None:
        fn = self.function
        # (a size parameter bound to an equal one of another object, as for
        # a definition traced before with another 'n', is substituted too:
        # the results' shapes use the call's inputs, which would clash with
        # the body's)
        sizes = {name: b for name, b in self.bindings.items()
                 if isinstance(p := fn.get_placeholder(name), SizeParam)
                 and b is not p}
        shapes = {name: substitute_sizes(ary.shape, sizes)
                  for name, ary in fn.returns.items()}
        object.__setattr__(self, "_pt_result_shapes", shapes)
        object.__setattr__(self, "_pt_results", {
            name: NamedCallResult(self, name) for name in fn.returns})

    if TYPE_CHECKING:
        # (set at construction)
        @property
        def _pt_result_shapes(self) -> Mapping[str, ShapeType]: ...

        @property
        def _pt_results(self) -> Mapping[str, NamedCallResult]: ...

    def _get_result_shape(self, name: str) -> ShapeType:
        return self._pt_result_shapes[name]

    def _get_result_dtype(self, name: str) -> np.dtype[np.generic]:
        return self.function.returns[name].dtype

    def __getitem__(self, name: str) -> NamedCallResult:
        try:
            return self._pt_results[name]
        except KeyError:
            raise InvalidKeyError(f"function '{self.function.identifier}' has no "
                                  f"result named '{name}'") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.function.returns)

    def __len__(self) -> int:
        return len(self.function.returns)

    def __contains__(self, name: object) -> bool:
        return name in self.function.returns

    def __repr__(self) -> str:
        return (f"Call(function={self.function.identifier!r}, "
                f"bindings={sorted(self.bindings)})")


def _check_bindings(fn: FunctionDefinition, bindings: Mapping[str, object]
                    ) -> None:
    ident = fn.identifier
    missing = fn.parameters - set(bindings)
    if missing:
        raise CallBindingError(
            f"call of function '{ident}': missing binding(s) for parameter(s) "
            f"{', '.join(sorted(missing))}")
    unknown = set(bindings) - fn.parameters
    if unknown:
        raise CallBindingError(
            f"call of function '{ident}': unknown parameter(s) "
            f"{', '.join(sorted(unknown))} (parameters: "
            f"{', '.join(sorted(fn.parameters))})")
    sizes: dict[str, Array] = {}
    for name, b in bindings.items():
        if not isinstance(b, Array):
            raise CallBindingError(
                f"call of function '{ident}': the binding of parameter "
                f"'{name}' is not an array but a {type(b).__name__}")
        if isinstance(fn.get_placeholder(name), SizeParam):
            if not (isinstance(b, SizeParam) and b.name == name):
                if not _is_size_expression(b):
                    raise CallBindingError(
                        f"call of function '{ident}': size parameter "
                        f"'{name}' must be bound to a 0-d integer expression "
                        f"of size parameters, got {type(b).__name__} of "
                        f"shape {format_shape(b.shape)} and dtype {b.dtype}")
                sizes[name] = b
    for name, b in bindings.items():
        p = fn.get_placeholder(name)
        # (every binding is an array: checked above)
        if not isinstance(p, Placeholder) or not isinstance(b, Array):
            continue
        if b.dtype != p.dtype:
            raise DTypeError(
                f"call of function '{ident}': parameter '{name}' has dtype "
                f"{p.dtype}, but its binding has dtype {b.dtype}")
        expected = substitute_sizes(p.shape, sizes)
        if not are_shapes_equal(expected, b.shape):
            raise ShapeMismatchError(
                f"call of function '{ident}': parameter '{name}' has shape "
                f"{format_shape(expected)}, but its binding has shape "
                f"{format_shape(b.shape)}")


@array_dataclass
class NamedCallResult(NamedArray):
    """The result named :attr:`name` of the :class:`Call`
    :attr:`_container`."""

    _mapper_method: ClassVar[str] = "map_named_call_result"

    @property
    def call(self) -> Call:
        """The :class:`Call` this is a result of."""
        return self._container

    @property
    def expr(self) -> Array:
        """The array returned by the function's body (in the callee's
        scope)."""
        return self._container.function.returns[self.name]

# }}}


# {{{ tracing

_TRACE_CACHE: OrderedDict[Hashable, FunctionDefinition] = OrderedDict()
_TRACE_CACHE_SIZE = 512


def _arg_signature(x: object) -> Hashable:
    if isinstance(x, Array):
        return ("array", x.shape, x.dtype)
    try:
        hash(x)
    except TypeError:
        return ("unhashable", id(x))
    return ("static", type(x), x)


def _parameter_for(ary: Array, name: str) -> Placeholder:
    return Placeholder(ary.shape, ary.dtype, name)


def _gather_returns(f_name: str, result: object
                    ) -> tuple[ReturnType, dict[str, Array]]:
    def check(name: str, x: object) -> Array:
        if not isinstance(x, Array):
            raise FunctionTracingError(
                f"function '{f_name}' returned {type(x).__name__} as result "
                f"'{name}'; traced functions must return an array, or a tuple "
                "or dict of arrays")
        return x

    if isinstance(result, Array):
        return ReturnType.ARRAY, {"_": result}
    if isinstance(result, (tuple, list)):
        return ReturnType.TUPLE_OF_ARRAYS, {
            f"_{i}": check(f"_{i}", x) for i, x in enumerate(result)}
    if isinstance(result, Mapping):
        for k in result:
            if not isinstance(k, str) or not k.isidentifier():
                raise FunctionTracingError(
                    f"function '{f_name}' returned a dict with key {k!r}; "
                    "keys must be valid identifiers")
        return ReturnType.DICT_OF_ARRAYS, {
            k: check(k, v) for k, v in result.items()}
    raise FunctionTracingError(
        f"function '{f_name}' returned {type(result).__name__}; traced "
        "functions must return an array, or a tuple or dict of arrays")


InputReplacer: TypeAlias = Callable[
    [Mapping[str, Array], Mapping[InputArgumentBase, Array]], dict[str, Array]]
"""Copies graphs (the values of a mapping) with some of their inputs
replaced (the keys of the second mapping, by its values)."""

_INPUT_REPLACER: list[InputReplacer] = []


def install_input_replacer(replacer: InputReplacer) -> None:
    """Make *replacer* the copy that :func:`trace_call` makes of a traced
    body to turn the inputs it captures into parameters. Called once, by
    :mod:`pytato.transform` (with
    :func:`pytato.transform.calls.replace_inputs`) when it is imported."""
    _INPUT_REPLACER[:] = [replacer]


class _CaptureLifter:
    """Replaces inputs of a traced body that are not parameters by fresh
    parameter placeholders ``_pt_capture_<k>``."""

    def __init__(self, params: Mapping[str, Placeholder]) -> None:
        self.params = {id(p) for p in params.values()}
        self.param_names = set(params)
        self.captured: dict[str, Array] = {}
        self.size_params: dict[str, SizeParam] = {}

    def lift(self, returns: dict[str, Array]) -> dict[str, Array]:
        replacements: dict[InputArgumentBase, Array] = {}
        for node in topological_order(returns.values()):
            if isinstance(node, SizeParam):
                self.size_params[node.name] = node
            elif (isinstance(node, InputArgumentBase)
                    and id(node) not in self.params
                    and node not in replacements):
                name = f"_pt_capture_{len(self.captured)}"
                self.captured[name] = node
                replacements[node] = Placeholder(
                    node.shape, node.dtype, name, axes=node.axes)
        if not replacements:
            return returns
        # installed by pytato.transform, which importing pytato imports
        (replace,) = _INPUT_REPLACER
        return replace(returns, replacements)


def trace_call(f: Callable[..., object], *args: object,
               identifier: Hashable | None = None,
               **kwargs: object) -> Any:
    r"""Call *f* on placeholders standing for the arrays among *args* and
    *kwargs* and return a :class:`Call` of the traced
    :class:`FunctionDefinition` bound to them.

    Arguments that are not arrays are passed to *f* unchanged (they are
    part of the traced function). The result mirrors what *f* returned: a
    :class:`NamedCallResult` for an array, a tuple of them for a tuple (or
    list), and a :class:`constantdict.constantdict` from the dict's keys to
    :class:`NamedCallResult`\ s for a dict, as in the reference pytato
    (each result's :attr:`NamedCallResult.call` is the :class:`Call`).

    *f* is traced on every call, so that values it captures are current.
    Calls of the same *f* and *identifier* on arguments of the same shapes
    and dtypes whose traced bodies are equal (the usual case) share one
    :class:`FunctionDefinition` object, so code generation emits one
    function for all call sites. Arrays *f* captures from the enclosing
    scope become parameters (bound at this call site).

    :arg identifier: names the function in generated code (default: the
        ``__name__`` of *f*).
    :raises pytato.diagnostic.FunctionTracingError: if *f* returns
        something other than an array, a tuple or a dict of arrays.
    """
    if identifier is None:
        identifier = getattr(f, "__name__", None) or "function"
        if not str(identifier).isidentifier():
            identifier = "function"
    f_name = str(identifier)

    params: dict[str, Placeholder] = {}
    bindings: dict[str, Array] = {}

    def stand_in(x: object, name: str) -> object:
        if not isinstance(x, Array):
            return x
        p = _parameter_for(x, name)
        params[name] = p
        bindings[name] = x
        return p

    traced_args = [stand_in(x, f"_pt_arg_{i}") for i, x in enumerate(args)]
    traced_kwargs = {k: stand_in(v, f"_pt_kwarg_{k}") for k, v in kwargs.items()}
    result = f(*traced_args, **traced_kwargs)
    return_type, returns = _gather_returns(f_name, result)

    lifter = _CaptureLifter(params)
    returns = lifter.lift(returns)
    bindings.update(lifter.captured)
    for name, sp in lifter.size_params.items():
        if name in bindings:
            raise FunctionTracingError(
                f"function '{f_name}': size parameter '{name}' clashes with "
                "a parameter name")
        bindings[name] = sp

    used = {n.name for n in topological_order(returns.values())
            if isinstance(n, (Placeholder, SizeParam))}
    # parameters the body does not use are dropped from the definition
    bindings = {k: v for k, v in bindings.items() if k in used}
    fdef = FunctionDefinition(frozenset(bindings), return_type, returns,
                              tags=frozenset({FunctionIdentifier(identifier)}))
    fdef = _intern(f, identifier, args, kwargs, fdef)
    return _call_results(Call(fdef, bindings))


def _call_results(call: Call) -> Array | tuple[Array, ...] | Mapping[str, Array]:
    """The results of *call* shaped as its function's :attr:`return_type`."""
    fn = call.function
    if fn.return_type == ReturnType.ARRAY:
        return call["_"]
    if fn.return_type == ReturnType.TUPLE_OF_ARRAYS:
        return tuple(call[f"_{i}"] for i in range(len(fn.returns)))
    return constantdict({name: call[name] for name in fn.returns})


def _intern(f: Callable[..., object], identifier: Hashable, args: Iterable[object],
            kwargs: Mapping[str, object], fdef: FunctionDefinition
            ) -> FunctionDefinition:
    key = (f, identifier, tuple(_arg_signature(a) for a in args),
           tuple(sorted((k, _arg_signature(v)) for k, v in kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return fdef
    cached = _TRACE_CACHE.get(key)
    if cached is not None and cached == fdef:
        _TRACE_CACHE.move_to_end(key)
        return cached
    _TRACE_CACHE[key] = fdef
    if len(_TRACE_CACHE) > _TRACE_CACHE_SIZE:
        _TRACE_CACHE.popitem(last=False)
    return fdef

# }}}


# vim: foldmethod=marker
