"""The exception hierarchy of :mod:`pytato`.

Every error raised for bad user input derives from :class:`PytatoError` and
from the matching builtin exception (:class:`ValueError`, :class:`TypeError`,
:class:`IndexError`), so code that catches the builtin keeps working.

.. autoexception:: PytatoError
.. autoexception:: ShapeMismatchError
.. autoexception:: DTypeError
.. autoexception:: AxisError
.. autoexception:: EinsumSpecError
.. autoexception:: ReshapeError
.. autoexception:: EmptyReductionError
.. autoexception:: NonAffineShapeError
.. autoexception:: NameClashError
.. autoexception:: NonUniqueTagError
.. autoexception:: IndexOutOfBoundsError
.. autoexception:: IntegerPowerError
.. autoexception:: UnknownArgumentError
.. autoexception:: MissingArgumentError
.. autoexception:: ArgumentShapeError
.. autoexception:: ArgumentDTypeError
.. autoexception:: BoundArgumentError
.. autoexception:: ArgumentLayoutError
.. autoexception:: ArgumentContextError
.. autoexception:: DeviceAllocationError
.. autoexception:: CannotBeLoweredToLoopyError
.. autoexception:: UnsupportedOperationError
.. autoexception:: DistributedError
.. autoexception:: GraphvizNotFoundError
.. autoexception:: GraphvizError
.. autoexception:: FunctionTracingError
.. autoexception:: CallBindingError
.. autoexception:: UnsupportedByTargetError
.. autoexception:: ArrayClassEqualityError
.. autoexception:: NotAnArrayError
.. autoexception:: NonIntegralArgumentError
.. autoexception:: DependencyCycleError
.. autoexception:: UnsupportedFeatureError
.. autoexception:: ArrayTooBigError

Names of the reference pytato's errors, each a subclass of the matching
error here:

.. autoexception:: CannotBroadcastError
.. autoexception:: InvalidEinsumIndex
.. autoexception:: NotAReductionAxis
.. autoexception:: CannotBeLoweredToIndexLambda
.. autoexception:: UnknownIndexLambdaExpr
.. autoexception:: InvalidArgumentError
.. autoexception:: InvalidArgumentTypeError
.. autoexception:: InvalidIndexError
.. autoexception:: IndexDTypeError
.. autoexception:: InvalidKeyError
.. autoexception:: TagTypeError
.. autoexception:: ScalarOverflowError
"""

from __future__ import annotations

from pytools.graph import CycleError as _PytoolsCycleError
from pytools.tag import NonUniqueTagError as _PytoolsNonUniqueTagError


class PytatoError(Exception):
    """Base class of all errors raised by :mod:`pytato`."""


class ShapeMismatchError(PytatoError, ValueError):
    """Shapes that must agree (e.g. for broadcasting) do not."""


class DTypeError(PytatoError, TypeError):
    """A dtype is not supported for an operation."""


class AxisError(PytatoError, ValueError, IndexError):
    """An axis argument is out of range or repeated."""


class EinsumSpecError(PytatoError, ValueError):
    """An einsum subscript string is malformed or disagrees with operands."""


class ReshapeError(PytatoError, ValueError):
    """A reshape to a shape with a different number of elements."""


class EmptyReductionError(PytatoError, ValueError):
    """A reduction without an identity (maximum, minimum) over an empty
    axis, with no initial value given."""


class NonAffineShapeError(PytatoError, ValueError):
    """A shape component is not an affine expression in size parameters."""


class NameClashError(PytatoError, ValueError, RuntimeError):
    """Two different inputs use the same name in one graph (also a
    :class:`RuntimeError`, as in the reference pytato)."""


class NonUniqueTagError(PytatoError, _PytoolsNonUniqueTagError):
    """A :class:`~pytools.tag.UniqueTag` of one type is given twice (also a
    :class:`pytools.tag.NonUniqueTagError`, a :class:`ValueError`)."""


class IndexOutOfBoundsError(PytatoError, IndexError):
    """A constant index is outside the bounds of the indexed axis."""


class IntegerPowerError(PytatoError, ValueError):
    """An integer raised to a constant negative integer power (numpy
    refuses it too)."""


class UnknownArgumentError(PytatoError, TypeError):
    """An argument passed at call time is not an input of the program."""


class MissingArgumentError(PytatoError, TypeError):
    """An input of the program was not passed at call time."""


class ArgumentShapeError(PytatoError, ValueError):
    """An argument passed at call time has the wrong shape."""


class ArgumentDTypeError(PytatoError, TypeError):
    """An argument passed at call time has the wrong dtype."""


class BoundArgumentError(PytatoError, ValueError):
    """An argument already bound to the program was passed again."""


class ArgumentLayoutError(PytatoError, ValueError):
    """A device array (:class:`pyopencl.array.Array`) passed at call time is
    not C-contiguous (numpy arrays are copied instead)."""




class DeviceAllocationError(PytatoError, MemoryError):
    """An output or temporary of a program is larger than the device can
    allocate in one buffer (a :class:`MemoryError`, as numpy raises for an
    array too large to allocate)."""


class CannotBeLoweredToLoopyError(PytatoError, NotImplementedError):
    """A graph node has no lowering to :mod:`loopy`."""


class UnsupportedOperationError(PytatoError, TypeError):
    """An operation that lazy arrays deliberately do not support."""


class DistributedError(PytatoError, ValueError):
    """A distributed partition is inconsistent across ranks."""


class GraphvizNotFoundError(PytatoError, RuntimeError):
    """The Graphviz ``dot`` program, needed to render a picture, is not
    installed."""


class GraphvizError(PytatoError, RuntimeError):
    """The Graphviz ``dot`` program failed to render a picture."""


class FunctionTracingError(PytatoError, TypeError):
    """A function traced into the graph (:func:`pytato.trace_call`) returns
    something other than arrays, or its body refers to inputs that are not
    its parameters."""


class CallBindingError(PytatoError, TypeError):
    """The bindings of a call (of a traced function or a loopy kernel) do
    not match its parameters: missing, unknown or of the wrong kind."""


class UnsupportedByTargetError(PytatoError, NotImplementedError):
    """A node (e.g. a call of a user loopy kernel, or a foreign scalar
    function without an implementation for the target) cannot be run by
    the chosen code generation target."""


class ArrayClassEqualityError(PytatoError, AssertionError):
    """An array class (a subclass of :class:`~pytato.Array` defined outside
    pytato) replaces the structural ``__eq__`` or ``__hash__`` of
    :class:`~pytato.Array`, typically by being declared with
    ``@dataclass(frozen=True)`` without ``eq=False``. Raised at the
    construction of its first node (an :class:`AssertionError`, as the
    reference pytato's check is an assertion)."""


class UnsupportedFeatureError(PytatoError, NotImplementedError, ValueError):
    """A feature of numpy's (or of an interface) that pytato does not
    support: ``order='F'``, boolean masks, :func:`pytato.pad` modes other
    than ``'constant'``, slices with steps other than 1 over symbolic
    lengths, ... A :class:`NotImplementedError`, and a :class:`ValueError`
    as the reference pytato raises for some of these."""


class ArrayTooBigError(PytatoError, ValueError):
    """An array whose number of bytes (elements times item size) does not
    fit a signed 64-bit integer, as numpy refuses it ("array is too
    big"): raised when the array is constructed, naming its shape."""


class NotAnArrayError(PytatoError, TypeError, AssertionError):
    """Something other than a :class:`~pytato.Array` where an array is
    required (e.g. the result of a mapper; a :class:`TypeError`, and an
    :class:`AssertionError` as the reference pytato asserts it)."""


class DependencyCycleError(PytatoError, _PytoolsCycleError):
    """Tasks (or nodes) to be ordered by their dependencies depend on each
    other in a cycle (a :class:`pytools.graph.CycleError`, whose ``node`` is
    one of the cycle, as the reference pytato raises)."""

    def __init__(self, node: object, message: str | None = None) -> None:
        super().__init__(node)
        self.message = message

    def __str__(self) -> str:
        return (self.message if self.message is not None
                else f"dependency cycle through {self.node!r}")


class CannotBroadcastError(ShapeMismatchError):
    """Shapes that cannot be broadcast against each other."""


class InvalidEinsumIndex(EinsumSpecError):
    """An index of an einsum subscript string is not valid for its
    operand (e.g. more indices than axes)."""


class NotAReductionAxis(PytatoError, ValueError):
    """An axis named as a reduction axis (of an
    :class:`~pytato.array.IndexLambda` or
    :class:`~pytato.array.Einsum`) is not one."""


class CannotBeLoweredToIndexLambda(PytatoError, ValueError):
    """A node cannot be expressed as an :class:`~pytato.array.IndexLambda`
    (raised by :func:`pytato.transform.lower_to_index_lambda.to_index_lambda`
    for nodes such as placeholders)."""


class UnknownIndexLambdaExpr(PytatoError, ValueError):
    """The expression of an :class:`~pytato.array.IndexLambda` matches no
    high-level operation (raised by
    :func:`pytato.raising.index_lambda_to_high_level_op`)."""


class InvalidArgumentError(PytatoError, ValueError):
    """An argument has an invalid value (the message names the argument).
    The general bad-input error where no more specific class applies."""


class ArgumentContextError(InvalidArgumentError):
    """A device array passed at call time belongs to another
    :class:`pyopencl.Context` than the queue of the call (OpenCL forbids
    using it there). An :class:`InvalidArgumentError`, as the launchers
    raised before."""


class InvalidArgumentTypeError(PytatoError, TypeError):
    """An argument is of a type the function does not accept (the message
    names the argument), e.g. a :class:`pyopencl.Context` passed where a
    :class:`pyopencl.CommandQueue` is expected."""


class NonIntegralArgumentError(InvalidArgumentTypeError, ValueError):
    """An argument that must be made of integers is not (e.g. the
    ``pad_width`` of :func:`pytato.pad`): a :class:`TypeError`, as for
    numpy, and a :class:`ValueError`, as for the reference pytato."""


class InvalidIndexError(PytatoError, IndexError):
    """An index (in ``x[...]``, or of an argument list) is not valid: of an
    unsupported kind, too many, or out of range."""


class IndexDTypeError(InvalidIndexError):
    """An array used as an index is not of an integer dtype (numpy raises
    :class:`IndexError` there too)."""


class InvalidKeyError(PytatoError, KeyError):
    """A name looked up (an output, a registered function) does not
    exist."""

    def __str__(self) -> str:
        # the message, not KeyError's repr of it
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class TagTypeError(InvalidArgumentTypeError):
    """Something other than :class:`pytools.tag.Tag`\\ s was given where
    tags are expected (e.g. a :class:`str`)."""


class ScalarOverflowError(PytatoError, OverflowError):
    """A Python integer operand does not fit the integer dtype of the
    array it is combined with (numpy 2, NEP 50, raises
    :class:`OverflowError` there too)."""
