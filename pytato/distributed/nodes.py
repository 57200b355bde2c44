"""Graph nodes for point-to-point communication between MPI ranks.

A rank's graph states what it sends and receives:

* :class:`DistributedRecv` is an array whose value arrives from another rank
  (it behaves like an input);
* :class:`DistributedSend` describes data to send to another rank. It is not
  an array: it enters a graph through a :class:`DistributedSendRefHolder`,
  an array equal to some other array (its *passthrough data*) that keeps the
  send alive, so that data is sent even when no output depends on it.

Communication tags (:attr:`DistributedSend.comm_tag`,
:attr:`DistributedRecv.comm_tag`) may be any hashable, picklable object;
:func:`~pytato.distributed.number_distributed_tags` maps them to integer MPI
tags agreed on by all ranks.

.. autoclass:: DistributedSend
.. autoclass:: DistributedSendRefHolder
.. autoclass:: DistributedRecv
.. autofunction:: make_distributed_send
.. autofunction:: staple_distributed_send
.. autofunction:: make_distributed_send_ref_holder
.. autofunction:: make_distributed_recv
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    Axis,
    ChildNode,
    DerivedShapeMixin,
    GraphNode,
    ShapeLike,
    ShapeType,
    _flatten,
    _merge_inputs,
    _TaggableMixin,
    array_dataclass,
    check_unique_tags,
    normalize_tags,
)
from pytato.array.constructors import _tags_and_axes, check_dtype
from pytato.array.shape import normalize_shape
from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError


__all__ = [
    "DistributedRecv",
    "DistributedSend",
    "DistributedSendRefHolder",
    "make_distributed_recv",
    "make_distributed_send",
    "make_distributed_send_ref_holder",
    "staple_distributed_send",
]


def _check_rank(rank: object, argname: str) -> int:
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
        raise InvalidArgumentTypeError(
            f"'{argname}' must be an integer rank, got {rank!r}")
    if rank < 0:
        raise InvalidArgumentError(f"'{argname}' must be non-negative, got {rank}")
    return int(rank)


def _check_comm_tag(comm_tag: object) -> Hashable:
    try:
        hash(comm_tag)
    except TypeError as e:
        raise InvalidArgumentTypeError(
            f"'comm_tag' must be hashable, got {comm_tag!r}") from e
    return comm_tag


# {{{ send

@dataclass(frozen=True, eq=False, repr=False)
class DistributedSend(GraphNode, _TaggableMixin):
    """A request to send :attr:`data` to rank :attr:`dest_rank` under tag
    :attr:`comm_tag`. Not an array: graph mappers visit it through
    ``map_distributed_send``.

    .. attribute:: data

        The :class:`~pytato.Array` sent.

    .. attribute:: dest_rank
    .. attribute:: comm_tag
    .. attribute:: tags
    """

    data: Array
    dest_rank: int
    comm_tag: Hashable
    tags: frozenset[Tag] = frozenset()

    _mapper_method: ClassVar[str] = "map_distributed_send"

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        kids: list[ChildNode] = []
        skel = tuple(_flatten(getattr(self, f.name), kids)
                     for f in dataclasses.fields(self))
        setattr_(self, "_pt_kids", tuple(kids))
        setattr_(self, "_pt_skel", skel)
        setattr_(self, "_pt_hash", hash(("DistributedSend", self.dest_rank,
                                         self.comm_tag, self.tags,
                                         hash(self.data))))
        setattr_(self, "_pt_inputs", _merge_inputs(kids, None))

    def __hash__(self) -> int:
        return self._pt_hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (isinstance(other, DistributedSend)
                and self._pt_hash == other._pt_hash
                and self._pt_skel == other._pt_skel
                and self.data == other.data)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __reduce__(self) -> tuple[object, ...]:
        # the cached hash must be recomputed in the unpickling process
        return (_make_send, (self.data, self.dest_rank, self.comm_tag,
                             self.tags))

    def __repr__(self) -> str:
        return (f"DistributedSend(data=<{type(self.data).__name__} "
                f"shape={self.data.shape} dtype={self.data.dtype}>, "
                f"dest_rank={self.dest_rank}, comm_tag={self.comm_tag!r})")

    @property
    def shape(self) -> ShapeType:
        """The shape of the data sent."""
        return self.data.shape

    @property
    def dtype(self) -> np.dtype[np.generic]:
        """The dtype of the data sent."""
        return self.data.dtype

    def copy(self, **kwargs: Any) -> DistributedSend:
        """Return a copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)


def _make_send(data: Array, dest_rank: int, comm_tag: Hashable,
               tags: frozenset[Tag]) -> DistributedSend:
    return DistributedSend(data, dest_rank, comm_tag, tags)


@array_dataclass
class DistributedSendRefHolder(DerivedShapeMixin, Array):
    """An array equal to :attr:`passthrough_data` that keeps :attr:`send`
    alive: wherever the holder is used, :attr:`send` is performed.

    .. attribute:: send

        A :class:`DistributedSend`.

    .. attribute:: passthrough_data

        The :class:`~pytato.Array` whose value the holder takes.
    """

    send: DistributedSend
    passthrough_data: Array

    _mapper_method: ClassVar[str] = "map_distributed_send_ref_holder"

    def _pt_compute_shape(self) -> ShapeType:
        return self.passthrough_data.shape

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return self.passthrough_data.dtype

# }}}


# {{{ receive

@array_dataclass
class DistributedRecv(Array):
    """An array received from rank :attr:`src_rank` under tag
    :attr:`comm_tag`.

    .. attribute:: shape
    .. attribute:: dtype
    .. attribute:: src_rank
    .. attribute:: comm_tag
    """

    shape: ShapeType
    dtype: np.dtype[np.generic]
    src_rank: int
    comm_tag: Hashable

    _mapper_method: ClassVar[str] = "map_distributed_recv"

# }}}


# {{{ constructors

def make_distributed_send(sent_data: Array, dest_rank: int, comm_tag: Hashable,
                          send_tags: Tag | Iterable[Tag] = frozenset()
                          ) -> DistributedSend:
    """A :class:`DistributedSend` of *sent_data* to *dest_rank* under
    *comm_tag* (any hashable). To make the send happen, staple it to an
    array that is computed with :func:`staple_distributed_send`, or wrap it
    in a :class:`DistributedSendRefHolder`."""
    if not isinstance(sent_data, Array):
        raise InvalidArgumentTypeError("'sent_data' must be a pytato Array, got "
                                       f"{type(sent_data).__name__}")
    tags = check_unique_tags(normalize_tags(send_tags), "DistributedSend")
    return DistributedSend(sent_data, _check_rank(dest_rank, "dest_rank"),
                           _check_comm_tag(comm_tag), tags)


def staple_distributed_send(sent_data: Array, dest_rank: int,
                            comm_tag: Hashable, stapled_to: Array, *,
                            send_tags: Tag | Iterable[Tag] = frozenset()
                            ) -> DistributedSendRefHolder:
    """Return an array equal to *stapled_to* whose evaluation also sends
    *sent_data* to *dest_rank* under *comm_tag*."""
    if not isinstance(stapled_to, Array):
        raise InvalidArgumentTypeError("'stapled_to' must be a pytato Array, got "
                                       f"{type(stapled_to).__name__}")
    send = make_distributed_send(sent_data, dest_rank, comm_tag, send_tags)
    return DistributedSendRefHolder(send, stapled_to, axes=stapled_to.axes)


def make_distributed_send_ref_holder(send: DistributedSend,
                                     passthrough_data: Array
                                     ) -> DistributedSendRefHolder:
    """A :class:`DistributedSendRefHolder`: an array equal to
    *passthrough_data* whose evaluation also performs *send* (made with
    :func:`make_distributed_send`)."""
    if not isinstance(send, DistributedSend):
        raise InvalidArgumentTypeError("'send' must be a DistributedSend, got "
                                       f"{type(send).__name__}")
    if not isinstance(passthrough_data, Array):
        raise InvalidArgumentTypeError("'passthrough_data' must be a pytato Array, got "
                                       f"{type(passthrough_data).__name__}")
    return DistributedSendRefHolder(send, passthrough_data,
                                    axes=passthrough_data.axes)


def make_distributed_recv(src_rank: int, comm_tag: Hashable, shape: ShapeLike,
                          dtype: npt.DTypeLike, axes: Iterable[Axis] | None = None,
                          tags: Tag | Iterable[Tag] = frozenset()
                          ) -> DistributedRecv:
    """A :class:`DistributedRecv`: an array of *shape* and *dtype* received
    from *src_rank* under *comm_tag* (any hashable)."""
    shape = normalize_shape(shape)
    dtype = check_dtype(dtype)
    tags, axes = _tags_and_axes(tags, axes, len(shape), "DistributedRecv")
    return DistributedRecv(shape, dtype, _check_rank(src_rank, "src_rank"),
                           _check_comm_tag(comm_tag), axes=axes, tags=tags)

# }}}

# vim: foldmethod=marker
