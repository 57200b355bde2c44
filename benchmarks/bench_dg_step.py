"""A DG time step as arraycontext-based codes compile it (issue 40).

Usage::

    python benchmarks/bench_dg_step.py [--dim 2 3] [--order 1 2 3 4]
        [--elements E ...] [--gpu-size] [--steps S] [--compile stage|step]
        [--device SPEC] [--no-check] [--show-kernels]

The linear wave equation (``u`` scalar, ``v`` a vector of ``dim``
components, unit wave speed) in strong form on a synthetic simplex mesh of
``E`` elements of order ``N``, advanced by the five-stage fourth-order
low-storage Runge--Kutta scheme of Carpenter and Kennedy (LSRK45). All array
operations go through the *real* :class:`arraycontext.PytatoPyOpenCLArrayContext`
(``actx.compile``, its freeze/thaw, ``unify_axes_tags``,
``generate_loopy(target=None).bind_to_context`` and its
``transform_loopy_program``, the base class's, which leaves the program as
pytato generated it): the script never calls pytato's code generation
itself.

The mesh is synthetic (no meshmode): random reference matrices of the right
shapes (a differentiation matrix per reference direction, ``Np x Np``; a
lift matrix ``Np x (faces * Nfp)``), random per-element geometric factors
``dr/dx`` (``E x dim x dim``), unit face normals and surface-to-volume
Jacobian ratios (``faces x E x Nfp``), and a face connectivity: for each
(face, element, face node) the flat index of the volume node on the own
element (the interior trace) and on the neighbour (the exterior trace), from
a random pairing of the faces of elements close in the numbering (a
fraction of boundary faces maps to itself). Axes are tagged as meshmode
tags them (element, DOF, face axis tags of our own, ``UniqueTag``
subclasses), with ``actx.tag_axis``.

One right-hand side evaluation, as grudge writes it::

    grad_x u = einsum("er,rij,ej->ei", drdx[:, :, x], D, u)
    u^-, u^+ = u_flat[int_idx], u_flat[ext_idx]         # (faces, E, Nfp)
    flux_u   = n.(v^- - v^+)/2 - tau (u^- - u^+)/2
    flux_v_x = n_x ((u^- - u^+)/2 - tau n.(v^- - v^+)/2)
    du/dt    = -div v + einsum("ifj,fej,fej->ei", LIFT, fscale, flux_u)
    dv_x/dt  = -grad_x u + einsum("ifj,fej,fej->ei", LIFT, fscale, flux_v_x)

(``tau = 1``: upwind flux, ``tau = 0``: central flux, ``--flux``).

``--compile stage`` (the default) compiles one LSRK stage, the right-hand
side and the update ``k = a k + dt rhs(q); q = q + b k`` of all fields,
with ``actx.compile`` and calls it five times per step with the stage's
coefficients as scalar arguments: mirgecom compiles its right-hand side and
fuses the state update into it the same way. ``--compile step`` compiles
the whole step (five stages) as one function.

Timing: one untimed step (it compiles), then ``--steps`` steps with
``actx.queue.finish()`` after each on a profiling queue. Reported per step:
the wall time (best and median over the steps), the device time (the sum
of the durations of the kernels of one step, from the OpenCL profiling
events of pytato's programs, ``program.statistics``), the number of kernel
launches per step and their global sizes, an estimate of the bytes a step
must move and the GB/s that gives against the device's copy bandwidth
(``cl.enqueue_copy`` of a large buffer, read + write, measured in the same
run). The estimate counts per stage: the fields and the RK register read
and written once (``4 (dim + 1) E Np`` values), the geometric factors, the
normals, the face Jacobian ratios and the two gather index arrays read once;
the reference matrices and the re-reads of gathered values are left out.
At orders above 2 the contractions make the step compute-bound on CPUs, so
the rows also give GFLOP/s of the contractions (:func:`step_flops`, over
the device time, or the wall time without profiling).
The launch sizes (from loopy's host code, which passes the number of
work-groups and the local size) are listed as ``groups x local size``.
``--show-kernels`` prints them per kernel with the kernel's device time,
and whether a kernel was generated with ``reqd_work_group_size(1, 1, 1)``.

The first step is compared against a numpy implementation of the same
formulas (float64); the script exits with status 1 on a mismatch. Meshes
of more than ``--check-elements`` elements (default 50 000) are checked by
a run of the same configuration on a mesh of that size (the numpy step of
a ``--gpu-size`` mesh takes minutes). It prints
one markdown table row per configuration. The device is picked by
``--device`` (a ``PYOPENCL_CTX``-like string) or ``PYOPENCL_CTX``. The
script puts its checkout first on ``sys.path``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
from pytools.tag import UniqueTag


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    import arraycontext  # noqa: F401
    from arraycontext import PytatoPyOpenCLArrayContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    sys.exit("bench_dg_step.py needs the client arraycontext "
             f"(import failed: {exc}); install it with "
             "`python -m pip install --no-deps /work/shared/clients/arraycontext`"
             " or `pip install arraycontext`.")


# {{{ axis tags (meshmode-like, our own)

class ElementAxisTag(UniqueTag):
    """The element axis of a DOF array (as meshmode's
    ``DiscretizationElementAxisTag``)."""


class DOFAxisTag(UniqueTag):
    """The DOF axis of a DOF array (as meshmode's
    ``DiscretizationDOFAxisTag``)."""


class FaceAxisTag(UniqueTag):
    """The face axis of a face array (as meshmode's
    ``DiscretizationFaceAxisTag``)."""


class DimAxisTag(UniqueTag):
    """An axis over spatial or reference dimensions
    (as meshmode's ``DiscretizationAmbientDimAxisTag``)."""

# }}}


# {{{ LSRK45 (Carpenter & Kennedy 1994, "Fourth-order 2N-storage Runge-Kutta
# schemes", NASA TM 109112, solution 3)

LSRK_A = (
    0.0,
    -567301805773.0 / 1357537059087.0,
    -2404267990393.0 / 2016746695238.0,
    -3550918686646.0 / 2091501179385.0,
    -1275806237668.0 / 842570457699.0,
)
LSRK_B = (
    1432997174477.0 / 9575080441755.0,
    5161836677717.0 / 13612068292357.0,
    1720146321549.0 / 2090206949498.0,
    3134564353537.0 / 4481467310338.0,
    2277821191437.0 / 14882151754819.0,
)

# }}}


# {{{ synthetic mesh

def nodes_per_element(dim: int, order: int) -> int:
    n = order
    if dim == 2:
        return (n + 1) * (n + 2) // 2
    return (n + 1) * (n + 2) * (n + 3) // 6


def nodes_per_face(dim: int, order: int) -> int:
    n = order
    return n + 1 if dim == 2 else (n + 1) * (n + 2) // 2


@dataclass
class Mesh:
    dim: int
    order: int
    nelements: int
    np_: int
    nfaces: int
    nfp: int
    #: (dim, Np, Np) reference differentiation matrices
    diff: np.ndarray
    #: (Np, faces, Nfp) lift matrix
    lift: np.ndarray
    #: (E, dim_r, dim_x) geometric factors dr/dx
    drdx: np.ndarray
    #: (dim, faces, E, Nfp) unit normals
    normal: np.ndarray
    #: (faces, E, Nfp) surface / volume Jacobian ratios
    fscale: np.ndarray
    #: (faces, E, Nfp) flat volume index of the interior trace
    int_idx: np.ndarray
    #: (faces, E, Nfp) flat volume index of the exterior trace
    ext_idx: np.ndarray


def make_mesh(dim: int, order: int, nelements: int, seed: int = 0,
              index_dtype: Any = np.int32, window: int = 64,
              boundary_fraction: float = 0.05) -> Mesh:
    """A random mesh of valid shapes (see the module docstring)."""
    rng = np.random.default_rng(seed)
    np_ = nodes_per_element(dim, order)
    nfp = nodes_per_face(dim, order)
    nfaces = dim + 1
    e = nelements

    # reference matrices scaled like those of a unit simplex (entries O(N^2))
    diff = rng.standard_normal((dim, np_, np_)) * (order / np.sqrt(np_))
    lift = rng.standard_normal((np_, nfaces, nfp)) / np.sqrt(nfaces * nfp)

    # geometric factors of affine elements: an O(1) matrix per element
    drdx = (np.eye(dim)[None, :, :]
            + 0.3 * rng.standard_normal((e, dim, dim)))
    normal = rng.standard_normal((dim, nfaces, e, 1))
    normal = normal / np.sqrt((normal**2).sum(axis=0, keepdims=True))
    normal = np.broadcast_to(normal, (dim, nfaces, e, nfp)).copy()
    fscale = np.broadcast_to(
        0.5 + rng.random((nfaces, e, 1)), (nfaces, e, nfp)).copy()

    # nodes of each face of the reference element: distinct local indices
    face_nodes = np.stack([rng.permutation(np_)[:nfp] for _ in range(nfaces)])

    # interior trace: the own element's face nodes
    elements = np.arange(e)
    int_idx = (elements[None, :, None] * np_
               + face_nodes[:, None, :])                    # (faces, E, Nfp)

    # exterior trace: pair the faces (element-major) within windows of
    # *window* elements, shuffled; the neighbour's face nodes reversed
    slots = np.arange(e * nfaces)                          # slot = e*F + f
    paired = np.empty_like(slots)
    chunk = window * nfaces
    for start in range(0, len(slots), chunk):
        block = rng.permutation(slots[start:start + chunk])
        nb = len(block) // 2 * 2
        a, b = block[0:nb:2], block[1:nb:2]
        paired[a], paired[b] = b, a
        if nb < len(block):
            paired[block[-1]] = block[-1]
    # boundary faces: a random fraction of the pairs, both sides mapping
    # to themselves
    bnd = slots[rng.random(len(slots)) < boundary_fraction]
    partner = paired.copy()
    partner[bnd] = bnd
    partner[paired[bnd]] = paired[bnd]

    nb_elem = partner // nfaces
    nb_face = partner % nfaces
    self_face = partner == slots
    ext = np.empty((e * nfaces, nfp), dtype=np.int64)
    rev = face_nodes[nb_face][:, ::-1]
    ext[:] = nb_elem[:, None] * np_ + rev
    ext[self_face] = (nb_elem[self_face, None] * np_
                      + face_nodes[nb_face[self_face]])
    ext_idx = ext.reshape(e, nfaces, nfp).transpose(1, 0, 2).copy()

    return Mesh(dim=dim, order=order, nelements=e, np_=np_, nfaces=nfaces,
                nfp=nfp, diff=diff, lift=lift, drdx=drdx, normal=normal,
                fscale=fscale,
                int_idx=int_idx.astype(index_dtype),
                ext_idx=ext_idx.astype(index_dtype))


def stable_dt(mesh: Mesh) -> float:
    """A time step small enough for the random operators to stay bounded
    over a few steps (the benchmark's timing does not depend on it)."""
    return 0.01 / (mesh.order**2)

# }}}


# {{{ the step with numpy (reference)

def np_rhs(mesh: Mesh, q: list[np.ndarray], tau: float) -> list[np.ndarray]:
    u, v = q[0], q[1:]
    dim = mesh.dim

    # the einsums of the module docstring, as matrix products (BLAS: fast
    # enough for --gpu-size meshes)
    d_w = {}

    def deriv(x: int, w: np.ndarray) -> np.ndarray:
        key = id(w)
        if key not in d_w:
            d_w[key] = [w @ mesh.diff[r].T for r in range(dim)]
        return sum(mesh.drdx[:, r, x, None] * d_w[key][r] for r in range(dim))

    lift_mat = mesh.lift.reshape(mesh.np_, -1)

    def lift(flux: np.ndarray) -> np.ndarray:
        scaled = (mesh.fscale * flux).transpose(1, 0, 2)
        return scaled.reshape(mesh.nelements, -1) @ lift_mat.T

    def traces(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = w.reshape(-1)
        return flat[mesh.int_idx], flat[mesh.ext_idx]

    u_int, u_ext = traces(u)
    v_tr = [traces(vx) for vx in v]
    n = mesh.normal
    ndv = sum(n[x] * (v_tr[x][0] - v_tr[x][1]) for x in range(dim))
    du = u_int - u_ext
    flux_u = 0.5 * ndv - tau * 0.5 * du
    rhs_u = -sum(deriv(x, v[x]) for x in range(dim)) + lift(flux_u)
    rhs_v = [-deriv(x, u) + lift(n[x] * (0.5 * du - tau * 0.5 * ndv))
             for x in range(dim)]
    return [rhs_u, *rhs_v]


def np_step(mesh: Mesh, q: list[np.ndarray], k: list[np.ndarray],
            dt: float, tau: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    for a, b in zip(LSRK_A, LSRK_B, strict=True):
        r = np_rhs(mesh, q, tau)
        k = [a * ki + dt * ri for ki, ri in zip(k, r, strict=True)]
        q = [qi + b * ki for qi, ki in zip(q, k, strict=True)]
    return q, k

# }}}


# {{{ the step with arraycontext

def make_obj_array(items: list[Any]) -> Any:
    from pytools import obj_array
    if hasattr(obj_array, "new_1d"):
        return obj_array.new_1d(items)
    return obj_array.make_obj_array(items)  # older pytools


def tag_dof(actx: Any, ary: Any) -> Any:
    """Tag the axes of an (E, Np) array."""
    return actx.tag_axis(1, DOFAxisTag(), actx.tag_axis(0, ElementAxisTag(), ary))


def tag_face(actx: Any, ary: Any) -> Any:
    """Tag the axes of a (faces, E, Nfp) array."""
    ary = actx.tag_axis(0, FaceAxisTag(), ary)
    ary = actx.tag_axis(1, ElementAxisTag(), ary)
    return actx.tag_axis(2, DOFAxisTag(), ary)


def make_ops(actx: Any, mesh: Mesh) -> Any:
    """The operators as a frozen object array of device arrays, their axes
    tagged, in the order :func:`actx_rhs` unpacks them."""
    def dev(a: np.ndarray) -> Any:
        return actx.from_numpy(np.ascontiguousarray(a))

    items = [dev(mesh.diff), dev(mesh.lift),
             tag_face(actx, dev(mesh.fscale)),
             tag_face(actx, dev(mesh.int_idx)),
             tag_face(actx, dev(mesh.ext_idx))]
    items += [actx.tag_axis(0, ElementAxisTag(), dev(mesh.drdx[:, :, x].copy()))
              for x in range(mesh.dim)]
    items += [tag_face(actx, dev(mesh.normal[x])) for x in range(mesh.dim)]
    return actx.freeze(make_obj_array(items))


def make_state(actx: Any, fields: list[np.ndarray]) -> Any:
    """The frozen object array of the DOF arrays *fields*, axes tagged."""
    return actx.freeze(make_obj_array(
        [tag_dof(actx, actx.from_numpy(a)) for a in fields]))


def actx_rhs(actx: Any, dim: int, ops: Any, q: Any, tau: float) -> Any:
    """The right-hand side of the wave equation of the state *q* (the
    arrays come in tagged: they were tagged before they were frozen, as
    meshmode's DOF arrays are)."""
    diff, lift, fscale, int_idx, ext_idx = ops[:5]
    drdx = ops[5:5 + dim]
    normal = ops[5 + dim:5 + 2 * dim]
    u = q[0]
    v = q[1:]

    def deriv(x: int, w: Any) -> Any:
        return tag_dof(actx, actx.einsum("er,rij,ej->ei", drdx[x], diff, w,
                                         arg_names=(f"drdx{x}", "diff", "w")))

    def lift_(flux: Any) -> Any:
        return tag_dof(actx, actx.einsum("ifj,fej,fej->ei", lift, fscale, flux,
                                         arg_names=("lift", "fscale", "flux")))

    def traces(w: Any) -> tuple[Any, Any]:
        flat = w.reshape(-1)
        return tag_face(actx, flat[int_idx]), tag_face(actx, flat[ext_idx])

    u_int, u_ext = traces(u)
    v_tr = [traces(vx) for vx in v]
    ndv = sum(normal[x] * (v_tr[x][0] - v_tr[x][1]) for x in range(dim))
    du = u_int - u_ext
    flux_u = 0.5 * ndv - tau * 0.5 * du
    rhs_u = -sum(deriv(x, v[x]) for x in range(dim)) + lift_(flux_u)
    rhs_v = [-deriv(x, u) + lift_(normal[x] * (0.5 * du - tau * 0.5 * ndv))
             for x in range(dim)]
    return make_obj_array([tag_dof(actx, r) for r in [rhs_u, *rhs_v]])


def make_stepper(actx: Any, dim: int, tau: float, mode: str) -> Any:
    """A function ``step(q, k, ops, dt) -> (q, k)`` advancing one LSRK45
    step, built from ``actx.compile``d functions (see the module
    docstring)."""
    def stage(q: Any, k: Any, ops: Any, a: float, bdt: float, b: float
              ) -> Any:
        r = actx_rhs(actx, dim, ops, q, tau)
        k = make_obj_array([tag_dof(actx, a * ki + bdt * ri)
                            for ki, ri in zip(k, r, strict=True)])
        q = make_obj_array([tag_dof(actx, qi + b * ki)
                            for qi, ki in zip(q, k, strict=True)])
        return make_obj_array([q, k])

    if mode == "stage":
        compiled_stage = actx.compile(stage)

        def step(q: Any, k: Any, ops: Any, dt: float) -> tuple[Any, Any]:
            for a, b in zip(LSRK_A, LSRK_B, strict=True):
                q, k = compiled_stage(q, k, ops, a, dt, b)
            return q, k
        return step

    def whole(q: Any, k: Any, ops: Any, dt: float) -> Any:
        for a, b in zip(LSRK_A, LSRK_B, strict=True):
            q, k = stage(q, k, ops, a, dt, b)
        return make_obj_array([q, k])

    compiled_step = actx.compile(whole)

    def step(q: Any, k: Any, ops: Any, dt: float) -> tuple[Any, Any]:
        q, k = compiled_step(q, k, ops, dt)
        return q, k
    return step

# }}}


# {{{ measurement helpers

def copy_bandwidth(queue: cl.CommandQueue, nbytes: int, runs: int = 10
                   ) -> float:
    """GB/s of ``enqueue_copy`` of *nbytes* (read + write), the best of
    *runs*, from profiling events."""
    ctx = queue.context
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
    dst = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float64(1.0), 0, nbytes)
    cl.enqueue_copy(queue, dst, src).wait()
    best = np.inf
    for _ in range(runs):
        evt = cl.enqueue_copy(queue, dst, src)
        evt.wait()
        best = min(best, (evt.profile.end - evt.profile.start) * 1e-9)
    return 2 * nbytes / best / 1e9


def step_flops(mesh: Mesh) -> int:
    """Floating-point operations of one step's contractions (2 per term:
    ``2 dim`` derivative einsums of ``E Np dim Np`` terms and ``dim + 1``
    lifts of ``E Np faces Nfp`` terms per stage; the element-wise work is
    left out)."""
    e, dim, np_ = mesh.nelements, mesh.dim, mesh.np_
    terms = (2 * dim * e * np_ * dim * np_
             + (dim + 1) * e * np_ * mesh.nfaces * mesh.nfp)
    return 5 * 2 * terms


def step_bytes(mesh: Mesh) -> int:
    """The bytes one step must move at least (see the module docstring)."""
    e, dim = mesh.nelements, mesh.dim
    fields = 4 * (dim + 1) * e * mesh.np_ * 8
    geo = e * dim * dim * 8
    face = (dim + 1) * mesh.nfaces * e * mesh.nfp * 8
    idx = 2 * mesh.nfaces * e * mesh.nfp * mesh.int_idx.dtype.itemsize
    return 5 * (fields + geo + face + idx)


# loopy's host code: "_lpy_knl = _lpy_cl_kernels.NAME" then
# "enqueue_nd_range_kernel(queue, _lpy_knl, (GLOBAL), (LOCAL), ..."
_KNL_RE = re.compile(r"_lpy_knl = _lpy_cl_kernels\.(\w+)")
_ENQUEUE_RE = re.compile(
    r"enqueue_nd_range_kernel\(\s*queue,\s*_lpy_knl,\s*"
    r"\(([^)]*)\),\s*\(([^)]*)\)")


def kernel_launch_info(program: Any) -> list[tuple[str, str, str]] | None:
    """(name, number of work-groups, local size) of each device kernel of a pytato
    program, from loopy's host code (in the order of the launches); None
    where it cannot be read."""
    try:
        import loopy as lp
        host = lp.generate_code_v2(program.program.t_unit).host_code()
    except Exception:
        return None
    names = list(_KNL_RE.finditer(host))
    launches = list(_ENQUEUE_RE.finditer(host))
    result = []
    for m in launches:
        before = [n for n in names if n.start() < m.start()]
        name = before[-1].group(1) if before else "?"
        result.append((name, m.group(1).strip().rstrip(","),
                       m.group(2).strip().rstrip(",")))
    return result


def device_code(program: Any) -> str | None:
    try:
        import loopy as lp
        return lp.generate_code_v2(program.program.t_unit).device_code()
    except Exception:
        return None

# }}}


@dataclass
class Result:
    dim: int
    order: int
    nelements: int
    ndofs: int
    wall_best: float
    wall_median: float
    dev_time: float | None
    launches: int | None
    nprograms: int
    gbs: float
    gbs_dev: float | None
    gflops: float
    copy_gbs: float
    checked: str
    sizes: str


def run_config(queue: cl.CommandQueue, dim: int, order: int, nelements: int,
               steps: int, mode: str, tau: float, check: bool,
               show_kernels: bool, copy_gbs: float,
               check_elements: int | None = None) -> Result:
    """Time *steps* steps of one configuration. With *check*, the first step
    is compared with :func:`np_step`; on a mesh of more than
    *check_elements* elements (numpy is slow there), that comparison is
    made by a run of the same configuration on *check_elements* elements
    instead."""
    checked = "not checked"
    if check and check_elements is not None and nelements > check_elements:
        run_config(queue, dim, order, check_elements, 1, mode, tau, True,
                   False, copy_gbs)
        check = False
        checked = f"yes (E={check_elements})"
    programs: list[Any] = []

    def trace(what: Any, stage: str, ir: Any) -> None:
        if stage == "final":
            programs.append(ir)

    with warnings.catch_warnings():
        # the base class's transform_loopy_program is the identity and says so
        warnings.filterwarnings("ignore", message=".*transform_loopy_program.*")
        actx = PytatoPyOpenCLArrayContext(
            queue, use_memory_pool=True, compile_trace_callback=trace)

        mesh = make_mesh(dim, order, nelements)
        rng = np.random.default_rng(1)
        q0 = [rng.standard_normal((nelements, mesh.np_))
              for _ in range(dim + 1)]
        k0 = [np.zeros_like(qi) for qi in q0]
        dt = stable_dt(mesh)

        ops = make_ops(actx, mesh)
        q = make_state(actx, q0)
        k = make_state(actx, k0)
        step = make_stepper(actx, dim, tau, mode)

        # first step: compiles; check it against numpy
        # the arguments are thawed (lazy data wrappers of device arrays), as
        # are the results of a compiled call: they go back in unchanged
        ops = actx.thaw(ops)
        qd, kd = step(actx.thaw(q), actx.thaw(k), ops, dt)
        queue.finish()
        if check:
            q_ref, k_ref = np_step(mesh, q0, k0, dt, tau)
            got_q = [actx.to_numpy(x) for x in qd]
            got_k = [actx.to_numpy(x) for x in kd]
            ok = all(np.allclose(g, r, rtol=1e-10, atol=1e-10)
                     for g, r in zip(got_q + got_k, q_ref + k_ref, strict=True))
            if not ok:
                err = max(np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-300)
                          for g, r in zip(got_q + got_k, q_ref + k_ref,
                                          strict=True))
                print(f"MISMATCH dim={dim} order={order} E={nelements}: "
                      f"relative error {err:.3e}")
                sys.exit(1)
            checked = "yes"
        q, k = qd, kd

        for p in programs:
            try:
                p.clear_statistics()
            except AttributeError:
                pass

        walls = []
        for _ in range(steps):
            t0 = time.perf_counter()
            q, k = step(q, k, ops, dt)
            queue.finish()
            walls.append(time.perf_counter() - t0)

    dev_time = None
    launches = None
    per_kernel: dict[str, Any] = {}
    try:
        for p in programs:
            for name, st in p.statistics.items():
                per_kernel[name] = st
        if per_kernel:
            dev_time = sum(st.total for st in per_kernel.values()) / steps
            launches = round(sum(st.count for st in per_kernel.values())
                             / steps)
    except AttributeError:
        pass

    sizes = []
    for p in programs:
        info = kernel_launch_info(p)
        if info:
            sizes.extend(f"{g.replace(', ', 'x')}x{lo.replace(', ', 'x')}"
                         for _, g, lo in info)
    if show_kernels:
        for i, p in enumerate(programs):
            print(f"## program {i}: {getattr(p.program, 'entrypoint', '?')}")
            for name, g, lo in kernel_launch_info(p) or []:
                st = per_kernel.get(name)
                t = f"{st.total / st.count * 1e6:.1f} us" if st else "?"
                print(f"   {name}: work-groups ({g}) of ({lo}) {t}")
            code = device_code(p)
            if code is not None and "reqd_work_group_size(1, 1, 1)" in code:
                print("   (a kernel has reqd_work_group_size(1, 1, 1))")

    nbytes = step_bytes(mesh)
    wall_best = min(walls)
    return Result(
        dim=dim, order=order, nelements=nelements,
        ndofs=(dim + 1) * nelements * mesh.np_,
        wall_best=wall_best, wall_median=statistics.median(walls),
        dev_time=dev_time, launches=launches, nprograms=len(programs),
        gbs=nbytes / wall_best / 1e9,
        gbs_dev=(nbytes / dev_time / 1e9) if dev_time else None,
        gflops=step_flops(mesh) / (dev_time or wall_best) / 1e9,
        copy_gbs=copy_gbs, checked=checked,
        sizes=", ".join(sizes) if sizes else "n/a")


def make_queue(spec: str | None) -> cl.CommandQueue:
    if spec is not None:
        os.environ["PYOPENCL_CTX"] = spec
    ctx = cl.create_some_context(interactive=False)
    return cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)


GPU_SIZES = {2: 4_000_000, 3: 1_000_000}
DEFAULT_SIZES = {2: 20_000, 3: 5_000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, nargs="+", default=[2, 3],
                        choices=[2, 3])
    parser.add_argument("--order", type=int, nargs="+", default=[1, 2, 3, 4],
                        choices=[1, 2, 3, 4])
    parser.add_argument("--elements", type=int, nargs="+", default=None,
                        help="element counts (default: a size for a 2-core "
                        "CPU, 2-D: 20 000, 3-D: 5 000)")
    parser.add_argument("--gpu-size", action="store_true",
                        help="sizes that fill an H200 (2-D: 4e6, 3-D: 1e6 "
                        "elements)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--compile", dest="mode", default="stage",
                        choices=["stage", "step"])
    parser.add_argument("--flux", default="upwind",
                        choices=["upwind", "central"])
    parser.add_argument("--device", default=None,
                        help="a PYOPENCL_CTX-like device spec")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the comparison with numpy")
    parser.add_argument("--check-elements", type=int, default=50_000,
                        help="larger meshes are checked on a mesh of this "
                        "many elements instead (default 50 000)")
    parser.add_argument("--show-kernels", action="store_true")
    args = parser.parse_args()

    queue = make_queue(args.device)
    dev = queue.device
    gpu = bool(dev.type & cl.device_type.GPU)
    copy_nbytes = (1 << 30) if gpu else (1 << 27)
    copy_gbs = copy_bandwidth(queue, copy_nbytes)
    tau = 1.0 if args.flux == "upwind" else 0.0

    print(f"device: {dev.platform.name} / {dev.name}; "
          f"copy bandwidth {copy_gbs:.1f} GB/s; compile per {args.mode}; "
          f"{args.flux} flux; {args.steps} timed steps")
    print()
    print("| dim | order | elements | DOFs (all fields) | wall ms/step, "
          "best / median | device ms/step (mean) | launches/step | programs | "
          "GB/s (wall / device) | % copy (device) | GFLOP/s | checked | "
          "work-groups x local size |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | "
          "---: | ---: | --- | --- |")
    for dim in args.dim:
        if args.elements:
            sizes = args.elements
        else:
            sizes = [(GPU_SIZES if args.gpu_size else DEFAULT_SIZES)[dim]]
        for order in args.order:
            for e in sizes:
                r = run_config(queue, dim, order, e, args.steps, args.mode,
                               tau, not args.no_check, args.show_kernels,
                               copy_gbs, args.check_elements)
                dev_ms = (f"{r.dev_time * 1e3:.3f}" if r.dev_time
                          else "n/a")
                gbs_dev = f"{r.gbs_dev:.1f}" if r.gbs_dev else "n/a"
                pct = (f"{100 * r.gbs_dev / copy_gbs:.0f}" if r.gbs_dev
                       else "n/a")
                print(f"| {dim} | {order} | {e} | {r.ndofs} | "
                      f"{r.wall_best * 1e3:.3f} / {r.wall_median * 1e3:.3f} | "
                      f"{dev_ms} | {r.launches or 'n/a'} | {r.nprograms} | "
                      f"{r.gbs:.1f} / {gbs_dev} | {pct} | {r.gflops:.1f} | "
                      f"{r.checked} | "
                      f"{r.sizes} |", flush=True)


if __name__ == "__main__":
    main()
