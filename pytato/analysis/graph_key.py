"""Persistent keys of graphs: a hash of a graph's structure that is the same
in every process (used by the program store,
:mod:`pytato.target.loopy.store.program_store`, and by
:class:`~pytato.analysis.PytatoKeyBuilder`).

.. autofunction:: graph_key
.. autoexception:: NotPersistentError
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

import numpy as np
from pymbolic.primitives import Variable

from pytato.array.base import GraphNode, topological_order
from pytato.scalar_expr import ReductionOperation


__all__ = ["NotPersistentError", "graph_key"]


class NotPersistentError(TypeError):
    """A graph holds a value that has no hash persistent across processes."""


class _Encoder:
    """A canonical text for values found in graph nodes: the same in every
    process for equal values (sets and mappings in sorted order), and
    unambiguous (each value tagged with its type, strings quoted).

    Subvalues shared between nodes (axes, tags, dtypes, subexpressions,
    tuples of skeletons) are encoded once per :func:`graph_key` (memoized
    by identity; the encoder keeps them alive), variables once per
    process (by name). Values that define ``update_persistent_hash``
    (e.g. the :mod:`loopy` translation units of loopy calls) are encoded
    by :mod:`loopy`'s :class:`~pytools.persistent_dict.KeyBuilder`,
    other dataclasses by their fields; any other value raises
    :class:`NotPersistentError`.
    """

    def __init__(self) -> None:
        self._memo: dict[int, str] = {}
        # the values memoized, kept alive so that their ids stay theirs
        self._alive: list[object] = []

    def __call__(self, value: object) -> str:
        tp = type(value)
        if tp is str:
            return repr(value)
        memo = self._memo.get(id(value))
        return self._new(value, tp) if memo is None else memo

    def _new(self, value: Any, tp: type) -> str:
        """The text of *value* (of type *tp*), not memoized yet."""
        if tp is int or tp is bool or value is None:
            return f"{tp.__name__}:{value!r}"
        if tp is float:
            return f"f:{value.hex()}"
        # other values (tuples included) are memoized by identity
        if tp is tuple:
            memo = f"({self.join(value)})"
        elif tp is Variable:
            # variables (the commonest expressions) by their name
            text = _VARIABLE_TEXT.get(value.name)
            if text is None:
                memo = self._encode_dataclass(value, tp)
                if (type(value.name) is str
                        and len(_VARIABLE_TEXT) < _MAX_VARIABLE_TEXTS):
                    _VARIABLE_TEXT[value.name] = memo
            else:
                memo = text
        elif tp in _DATACLASS_FIELDS:
            memo = self._encode_dataclass(value, tp)
        else:
            memo = self._encode(value, tp)
        self._memo[id(value)] = memo
        self._alive.append(value)
        return memo

    def join(self, values: Iterable[object]) -> str:
        """The texts of *values* joined by commas (as in the text of a
        tuple of *values*)."""
        get = self._memo.get
        new = self._new
        parts = []
        for v in values:
            tp = type(v)
            if tp is str:
                parts.append(repr(v))
            elif tp is int:
                parts.append(f"int:{v!r}")
            else:
                # (memoized values are alive: an id found is theirs)
                memo = get(id(v))
                parts.append(new(v, tp) if memo is None else memo)
        return ",".join(parts)

    def _encode_dataclass(self, value: object, tp: type) -> str:
        fields = _DATACLASS_FIELDS.get(tp)
        if fields is None:
            return self._encode(value, tp)
        get = self._memo.get
        parts = []
        for name in fields[1:]:
            v = getattr(value, name)
            vtp = type(v)
            if vtp is str:
                parts.append(f"{name}={v!r}")
            else:
                memo = get(id(v)) if vtp is not int else None
                parts.append(
                    f"{name}={self._new(v, vtp) if memo is None else memo}")
        return f"{fields[0]}({','.join(parts)})"

    def _encode(self, value: Any, tp: type) -> str:
        if isinstance(value, GraphNode):
            # a graph held by a value (e.g. the returns of a function
            # definition): by its own key
            return f"graph:{graph_key([value])}"
        if isinstance(value, type):
            return f"type:{value.__module__}.{value.__qualname__}"
        if tp is complex:
            return f"c:{value.real.hex()},{value.imag.hex()}"
        if tp is bytes:
            return f"b:{value.hex()}"
        if isinstance(value, np.dtype):
            return f"dtype:{value.str}:{value.descr!r}"
        if isinstance(value, np.generic):
            return (f"np:{value.dtype.str}:"
                    f"{np.asarray(value).tobytes().hex()}")
        if isinstance(value, frozenset):
            return "{" + ",".join(sorted(self(v) for v in value)) + "}"
        if isinstance(value, Mapping):
            return ("{" + ",".join(sorted(
                f"{self(k)}:{self(v)}" for k, v in value.items())) + "}")
        if tp is slice:
            # (not through a tuple: a temporary would spoil the memo by id)
            return (f"slice:({self(value.start)},{self(value.stop)},"
                    f"{self(value.step)})")
        if isinstance(value, Enum):
            return f"enum:{self(type(value))}:{value.name}"
        if isinstance(value, ReductionOperation):
            return f"redop:{self(tp)}"
        if hasattr(value, "update_persistent_hash"):
            # objects that say what their persistent hash is, e.g. the
            # translation unit of a loopy call
            try:
                # (loopy, at first use: see pytato.lazy_imports)
                from loopy.tools import LoopyKeyBuilder
                return f"pk:{self(tp)}:{LoopyKeyBuilder()(value)}"
            except TypeError as e:
                raise NotPersistentError(str(e)) from e
        if dataclasses.is_dataclass(value):
            _DATACLASS_FIELDS[tp] = (
                f"dc:{tp.__module__}.{tp.__qualname__}",
                *(f.name for f in dataclasses.fields(value)))
            return self._encode_dataclass(value, tp)
        raise NotPersistentError(
            f"a value of type '{tp.__module__}.{tp.__qualname__}' has no "
            "persistent hash")


# dataclass types: their encoded name, then their field names
_DATACLASS_FIELDS: dict[type, tuple[str, ...]] = {}

# the texts of pymbolic variables, by name (for the first names seen)
_VARIABLE_TEXT: dict[str, str] = {}
_MAX_VARIABLE_TEXTS = 1 << 16


def graph_key(roots: Iterable[GraphNode],
              order: list[GraphNode] | None = None) -> str:
    """A hash of the graph of *roots* that is the same in every process for
    structurally equal graphs (with equal values of all fields that take
    part in equality), and differs otherwise (but for hash collisions of
    SHA-256).

    :arg order: the :func:`~pytato.array.base.topological_order` of
        *roots*, if the caller has it.
    :raises NotPersistentError: if a node holds a value without a
        persistent hash (e.g. the data of a data wrapper: keys are made for
        preprocessed graphs, where data wrappers became placeholders).
    """
    if order is None:
        order = topological_order(roots)
    position = {id(node): i for i, node in enumerate(order)}
    encode = _Encoder()
    join = encode.join
    digest = hashlib.sha256()
    type_text: dict[type, str] = {}
    for node in order:
        tp = type(node)
        text = type_text.get(tp)
        if text is None:
            text = type_text[tp] = encode(tp)
        kids = ",".join([str(position[id(kid)])
                         for kid in node._pt_kids])
        # (the text of the skeleton tuple, not memoized: it is the node's)
        digest.update(
            f"{text}({join(node._pt_skel)})"
            f"[{kids}];".encode())
    return digest.hexdigest()
