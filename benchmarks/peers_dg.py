"""The DG and reduction workloads of the peers benchmark (issue 44), for
``bench_peers.py``: small-matrix einsums applied across many elements,
as discontinuous Galerkin codes run them, a matrix-vector product and
sums of a large matrix, and a DG operator as arraycontext-based codes
emit it.

* ``ij,ej->ei`` (one reference matrix applied to every element),
  ``eij,ej->ei`` (a matrix per element), ``ij,ejk->eik`` (several
  components per node), ``eij,ejk->eik`` (batched), ``ifj,fej->ei`` (the
  lift of face values: faces and face nodes reduced), with 20 x 20
  matrices (a 3-D simplex of order 3; faces of 10 nodes) and
  :data:`CPU_ELEMENTS` (:data:`GPU_ELEMENTS` on GPUs) elements of
  ``float64``;
* ``matvec 4096^2``, ``row sums 4096^2`` and ``full sum 4096^2``;
* ``dg operator {2,3}d p{1..4}``: the right-hand side of the advection of
  :data:`DG_FIELDS` scalar fields on simplices of order 1 to 4 (node
  counts ``(p+1)(p+2)/2`` in 2-D, ``(p+1)(p+2)(p+3)/6`` in 3-D; 3 or 4
  faces), field by field as arraycontext-based codes (grudge) emit it:
  reference derivatives by ``einsum("ij,ej->ei")``, the chain rule with
  the elements' inverse Jacobians, interior and exterior face values
  gathered from the flat field by index arrays, an upwind flux per face
  node, and its lift back to the volume by ``einsum("ifj,fej->ei")``.
  The mesh is made up: the neighbor across face ``f`` is the element
  :data:`NEIGHBOR_SHIFTS` ``[f]`` away, the face nodes are random.

:data:`WORKLOADS` lists them all.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np


try:  # run as a script of benchmarks/ (its folder on the path)
    from peer_workload import Workload
except ImportError:  # imported from the repository's root
    from benchmarks.peer_workload import Workload


__all__ = [
    "CPU_ELEMENTS",
    "DG_FIELDS",
    "GPU_ELEMENTS",
    "NEIGHBOR_SHIFTS",
    "SIDE",
    "WORKLOADS",
]

#: Elements of the einsum and DG workloads on CPUs.
CPU_ELEMENTS = 2**16

#: Elements of the einsum and DG workloads on GPUs.
GPU_ELEMENTS = 2**20

#: Fields of the DG operator.
DG_FIELDS = 3

#: The distance (in elements) to the neighbor across each face in the DG
#: operator's mesh.
NEIGHBOR_SHIFTS = (1, -1, 256, -256)

#: Side of the matrix of the matvec and the sums.
SIDE = 4096


def _elements(gpu: bool) -> int:
    return GPU_ELEMENTS if gpu else CPU_ELEMENTS


def _einsum_workload(spec: str, sizes: dict[str, int]) -> Workload:
    """``einsum(spec)`` over operands of random values; the ``e`` axis has
    :func:`_elements` entries, the others *sizes*."""
    ins = spec.split("->")[0].split(",")
    names = [f"a{k}" for k in range(len(ins))]

    def inputs(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        extent = {**sizes, "e": _elements(gpu)}
        return {name: rng.standard_normal(tuple(extent[c] for c in s))
                for name, s in zip(names, ins, strict=True)}

    def build(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
        return {"out": xp.einsum(spec, *(arrays[n] for n in names))}

    return Workload(spec, inputs, build)


def _sum(xp: Any, x: Any, axis: int | None) -> Any:
    if xp.__name__ == "torch":
        return xp.sum(x) if axis is None else xp.sum(x, dim=axis)
    return xp.sum(x, axis=axis)


def _matrix_workloads() -> list[Workload]:
    def matrix(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        return {"a": rng.standard_normal((SIDE, SIDE))}

    def matvec_inputs(rng: np.random.Generator, gpu: bool
                      ) -> dict[str, np.ndarray]:
        return {**matrix(rng, gpu), "x": rng.standard_normal(SIDE)}

    return [
        Workload(f"matvec {SIDE}^2", matvec_inputs,
                 lambda xp, a: {"out": a["a"] @ a["x"]}),
        Workload(f"row sums {SIDE}^2", matrix,
                 lambda xp, a: {"out": _sum(xp, a["a"], 1)}),
        Workload(f"full sum {SIDE}^2", matrix,
                 lambda xp, a: {"out": _sum(xp, a["a"], None)}),
    ]


# {{{ the DG operator

def _dg_sizes(dim: int, order: int) -> tuple[int, int, int]:
    """Volume nodes, faces and nodes per face of a simplex."""
    return comb(order + dim, dim), dim + 1, comb(order + dim - 1, dim - 1)


def _dg_workload(dim: int, order: int) -> Workload:
    n_vol, n_faces, n_face = _dg_sizes(dim, order)
    velocity = [1.0, -0.5, 0.25][:dim]

    def inputs(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        n_el = _elements(gpu)
        result = {
            f"diff{r}": rng.standard_normal((n_vol, n_vol))
            for r in range(dim)}
        result["lift"] = rng.standard_normal((n_vol, n_faces, n_face))
        # the inverse Jacobian d r / d x of each (affine) element
        result["inv_jac"] = rng.standard_normal((dim, dim, n_el))
        normals = rng.standard_normal((dim, n_faces, n_el))
        result["normals"] = normals / np.linalg.norm(normals, axis=0)
        result["face_jac"] = rng.uniform(0.5, 1.5, (n_faces, n_el))
        # which volume node (flat index) each face node takes its interior
        # and exterior values from
        face_nodes = rng.integers(0, n_vol, (n_faces, 1, n_face))
        elements = np.arange(n_el).reshape(1, n_el, 1)
        result["interior"] = (elements * n_vol + face_nodes).astype(np.int64)
        # the neighbor across face f: the element NEIGHBOR_SHIFTS[f] away
        # (mod the number of elements), as in a mesh numbered along a
        # space-filling curve
        shifts = np.array(NEIGHBOR_SHIFTS[:n_faces]).reshape(n_faces, 1, 1)
        neighbors = (elements + shifts) % n_el
        result["exterior"] = (neighbors * n_vol
                              + face_nodes[::-1]).astype(np.int64)
        for k in range(DG_FIELDS):
            result[f"u{k}"] = rng.standard_normal((n_el, n_vol))
        return result

    def build(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
        n_el = a["u0"].shape[0]
        # the normal velocity on each face
        c_n = sum(velocity[x] * a["normals"][x] for x in range(dim))
        outputs = {}
        for k in range(DG_FIELDS):
            u = a[f"u{k}"]
            ref_grad = [xp.einsum("ij,ej->ei", a[f"diff{r}"], u)
                        for r in range(dim)]
            volume = 0
            for x in range(dim):
                du_dx = sum(a["inv_jac"][r, x].reshape(n_el, 1) * ref_grad[r]
                            for r in range(dim))
                volume = volume - velocity[x] * du_dx
            flat = u.reshape(n_el * n_vol)
            u_int = flat[a["interior"]]
            u_ext = flat[a["exterior"]]
            c = c_n.reshape(n_faces, n_el, 1)
            # upwind: the value on the side the flow comes from
            flux = (0.5 * c * (u_int + u_ext)
                    + 0.5 * abs(c) * (u_int - u_ext))
            flux = flux * a["face_jac"].reshape(n_faces, n_el, 1)
            outputs[f"rhs{k}"] = volume - xp.einsum(
                "ifj,fej->ei", a["lift"], flux - c * u_int)
        return outputs

    return Workload(f"dg operator {dim}d p{order}", inputs, build,
                    rtol=1e-9)

# }}}


WORKLOADS: list[Workload] = [
    _einsum_workload("ij,ej->ei", {"i": 20, "j": 20}),
    _einsum_workload("eij,ej->ei", {"i": 20, "j": 20}),
    _einsum_workload("ij,ejk->eik", {"i": 20, "j": 20, "k": 3}),
    _einsum_workload("eij,ejk->eik", {"i": 20, "j": 20, "k": 3}),
    _einsum_workload("ifj,fej->ei", {"i": 20, "f": 4, "j": 10}),
    *_matrix_workloads(),
    *(_dg_workload(dim, order) for dim in (2, 3) for order in (1, 2, 3, 4)),
]
