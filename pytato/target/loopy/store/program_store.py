"""A persistent store of generated programs, keyed by graph.

A process that generates code for a graph that an earlier process (or an
earlier call of the same process whose in-memory
:data:`~pytato.target.loopy.PROGRAM_CACHE` has forgotten it) already
generated finds the results here, on disk:

* :func:`~pytato.generate_loopy` takes the generated and scheduled
  :class:`loopy.TranslationUnit` from the store instead of lowering and
  scheduling the graph again;
* the program's first call takes the linearized translation unit, the
  OpenCL code and :mod:`loopy`'s host code (its invoker) from the store
  instead of from :mod:`loopy`'s on-disk caches. Those are keyed by the
  translation unit: each lookup hashes all of it (about a second each for
  the 10 000-node random DAG of ``benchmarks/bench_codegen.py``, and a cold
  first call stored three results, hashing twice). Here the key is the
  graph's, computed once;
* for programs of many kernels, the compiled function of their fast calls
  (:data:`~pytato.target.loopy.run.fast_call.STORED_RUN_MIN_KERNELS`) is
  kept too, and the device binaries of built programs
  (:mod:`~pytato.target.loopy.build.binaries`, keyed by source, options,
  device and driver).

The key of a program (:func:`program_key`) is a hash of

* the preprocessed graph (:func:`graph_key`): for each node, in the
  deterministic topological order of :func:`pytato.array.base.topological_order`,
  its type, the values of its fields that take part in equality (shapes,
  dtypes, names, tags, axes, scalar expressions, ...) and the positions of
  its children. Data wrappers were replaced by placeholders, so the key
  does not depend on data (the program takes it as bound arguments);
* everything else that :func:`~pytato.generate_loopy` depends on: the loopy
  target, options, function name, the tag types not propagated, whether the
  default schedule runs and the
  :class:`~pytato.target.loopy.device.DeviceInfo` it schedules
  for (programs generated without a device store their
  lowered, unscheduled unit under a key without a device, and the unit
  scheduled for each device they run on under :func:`scheduled_key`, which
  names that device's :class:`~pytato.target.loopy.device.DeviceInfo`);
* the versions of the code that produced the results: a digest of the
  source files of :mod:`pytato` and :mod:`loopy`'s data model version, so
  that results of other code are never found, and the current values of
  the constants that tune code generation (:data:`TUNING_MODULES`).

For a graph holding values without a persistent hash (e.g. Python
functions, or objects of types the key builder does not know), computing
the key raises :class:`NotPersistentError`; such programs are generated as
before, without the store.

The store is off when :mod:`loopy`'s caching is (``with
loopy.CacheMode(False):``, or ``LOOPY_NO_CACHE``) or when the environment
variable ``PYTATO_NO_PROGRAM_STORE`` is set to a non-empty value other
than ``0``. Its folder is ``PYTATO_PROGRAM_STORE_DIR`` if set, else the
default folder of :mod:`pytools`' persistent dictionaries (in the user's
cache folder, like :mod:`loopy`'s caches). Entries are never evicted (a
program of a large DAG takes megabytes; programs from the store
no longer go through :mod:`loopy`'s caches); remove the folder's file
``pdict-v5-pytato-program-store-*`` to reclaim the space. Processes
sharing the folder (e.g. MPI ranks) may store the same program
concurrently: the first write wins, and equal keys hold equal programs.

Loading. Entries are unpickled with the garbage collector off, and the
objects made go straight to its oldest generation (they live as long as
the program that holds them). The lowered unit of a program generated
without a device stays pickled until it is read
(:mod:`~pytato.target.loopy.run.stored_unit`): a process runs such a
program from the unit scheduled for its device.

Memory of long-running processes. Generating many distinct programs
grows a process's memory through caches, each bounded or boundable:

* :data:`~pytato.target.loopy.PROGRAM_CACHE`: an LRU of 64 programs;
* the in-memory LRUs of the store and of :mod:`loopy`'s on-disk caches
  (:class:`pytools.persistent_dict.WriteOncePersistentDict`, 256 entries
  each);
* the page caches of the :mod:`sqlite3` connections behind those on-disk
  caches: :mod:`pytools` sets them to 64 MB each, so that a process's
  resident memory grows with every program written until each reaches
  64 MB. When the store is first used, its
  page cache and those of :mod:`loopy`'s caches are set to
  :data:`SQLITE_CACHE_KIB` (:func:`limit_cache_memory`);
* a global memo of :mod:`loopy` (the dependencies of each expression seen,
  ``loopy.symbolic._get_dependencies_and_reduction_inames``), which
  :mod:`loopy` never clears:
  :func:`~pytato.target.loopy.loopy_memos.trim_loopy_memos` (called at each
  code generation) clears it past
  :data:`~pytato.target.loopy.loopy_memos.LOOPY_MEMO_LIMIT` entries;
* the sources of generated Python code (the invokers of programs) that
  :mod:`pytools` keeps in :mod:`linecache`, for every program run:
  :func:`~pytato.target.loopy.loopy_memos.trim_loopy_memos` keeps the
  latest :data:`~pytato.target.loopy.loopy_memos.GENERATED_SOURCE_LIMIT`.

:func:`release_cache_memory` empties all of them (results are then found
on disk again, or regenerated). Setting ``LOOPY_NO_CACHE=1`` and
``PYTATO_NO_PROGRAM_STORE=1`` avoids the on-disk caches altogether.

.. autofunction:: program_key
.. autofunction:: scheduled_key
.. autofunction:: store_enabled
.. autofunction:: load
.. autofunction:: load_data
.. autofunction:: loads
.. autofunction:: save
.. autodata:: STORE_VERSION
.. autodata:: TUNING_MODULES
.. autodata:: SQLITE_CACHE_KIB
.. autofunction:: limit_cache_memory
.. autofunction:: release_cache_memory
"""

from __future__ import annotations

import copyreg
import dataclasses
import gc
import hashlib
import io
import logging
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytools import strtobool
from pytools.persistent_dict import KeyBuilder, WriteOncePersistentDict

from pytato.analysis.graph_key import NotPersistentError, _Encoder, graph_key
from pytato.target.loopy.loopy_memos import LOOPY_MEMO_LIMIT, trim_loopy_memos
from pytato.target.loopy.store.program_cache import PROGRAM_CACHE
from pytato.tuning import changed_constants


if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from loopy.kernel import LoopKernel

    from pytato.array.base import GraphNode


__all__ = [
    "LOOPY_MEMO_LIMIT", "SQLITE_CACHE_KIB", "STORE_VERSION", "TUNING_MODULES",
    "NotPersistentError", "graph_key", "limit_cache_memory", "load",
    "load_data", "loads",
    "program_key", "release_cache_memory", "save", "scheduled_key",
    "store_enabled", "trim_loopy_memos",
]

_logger = logging.getLogger("pytato.target.loopy")

STORE_VERSION = 2
"""The layout of the stored entries (part of every key)."""


# {{{ keys

_SOURCE_DIGEST: list[str | None] = []


def _source_digest() -> str:
    """A digest of the source files of :mod:`pytato` (computed once).

    :raises NotPersistentError: if they cannot be read (e.g. an install
        without its source files): without it, results of other code
        could be found."""
    if not _SOURCE_DIGEST:
        digest = hashlib.sha256()
        try:
            # the folder of the package pytato (this module is
            # pytato/target/loopy/store/program_store.py)
            root = Path(__file__).resolve().parents[3]
            paths = sorted(root.rglob("*.py"))
            if not paths:
                raise OSError(f"no source files in {root}")
            for path in paths:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
        except (OSError, TypeError) as e:
            _SOURCE_DIGEST.append(None)
            _logger.info("program store not used: pytato's sources cannot "
                         "be read (%s)", e)
        else:
            _SOURCE_DIGEST.append(digest.hexdigest())
    if _SOURCE_DIGEST[0] is None:
        raise NotPersistentError("pytato's sources cannot be read")
    return _SOURCE_DIGEST[0]


#: The modules whose public constants (upper-case names of numbers,
#: strings and tuples, e.g.
#: :data:`pytato.target.loopy.schedule.tiling_plan.MAX_ELEMENTS_PER_ITEM`)
#: tune code generation: those changed since the module's code set them
#: are part of every key (:func:`pytato.tuning.changed_constants`), so that
#: a program generated after one was changed is not found under the
#: values as written (which the digest of the sources covers).
TUNING_MODULES = (
    "pytato.codegen",
    "pytato.transform.materialize",
    "pytato.target.loopy.lower.graph",
    "pytato.target.loopy.lower.fusion",
    "pytato.target.loopy.lower.calls",
    "pytato.target.loopy.lower.sparse",
    "pytato.target.loopy.device",
    "pytato.target.loopy.schedule.default",
    "pytato.target.loopy.schedule.outputs",
    "pytato.target.loopy.schedule.reductions",
    "pytato.target.loopy.schedule.reduction_plans",
    "pytato.target.loopy.schedule.cpu_reductions",
    "pytato.target.loopy.schedule.accumulators",
    "pytato.target.loopy.schedule.tiling_plan",
    "pytato.target.loopy.schedule.vector_calls",
    "pytato.target.loopy.schedule.small_contractions",
    "pytato.target.loopy.schedule.gpu_contractions",
    "pytato.target.loopy.build.vector_code",
    "pytato.target.loopy.build.cl_target",
    "pytato.target.loopy.build.target_parameters",
)


_DEPENDENCY_VERSIONS: list[tuple[object, ...]] = []

#: The packages whose versions name :mod:`loopy`'s data model (as
#: ``loopy.version.DATA_MODEL_VERSION`` does).
DEPENDENCIES = ("loopy", "islpy", "cgen")


def _dependency_versions() -> tuple[object, ...]:
    """The installed versions of :data:`DEPENDENCIES`, found without
    importing them (a warm process need not import :mod:`loopy`): the
    names of their distributions' metadata folders, and the modification
    time and size of their ``__init__.py``."""
    if not _DEPENDENCY_VERSIONS:
        import importlib.util  # (once a process: not needed before)
        result: list[object] = []
        for name in DEPENDENCIES:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                result.append((name, None))
                continue
            stat = os.stat(spec.origin)
            site = os.path.dirname(os.path.dirname(spec.origin))
            try:
                dists = sorted(d for d in os.listdir(site)
                               if d.startswith(f"{name}-")
                               and d.endswith((".dist-info", ".egg-info")))
            except OSError:
                dists = []
            result.append((name, spec.origin, stat.st_mtime_ns,
                           stat.st_size, tuple(dists)))
        _DEPENDENCY_VERSIONS.append(tuple(result))
    return _DEPENDENCY_VERSIONS[0]


def _tuning_constants() -> tuple[tuple[str, object], ...]:
    # (their values as written are in the sources' digest; the modules a
    # process does not import are not read)
    return changed_constants(TUNING_MODULES)


def program_key(roots: Iterable[GraphNode], *,
                order: list[GraphNode] | None = None,
                **parameters: object) -> str:
    """The key of the program generated for the (preprocessed) graph of
    *roots* (in topological *order*, if given: see :func:`graph_key`) with
    the code generation *parameters* (values with persistent hashes: the
    loopy target, options, device information, ...).

    :raises NotPersistentError: if the graph or a parameter has no
        persistent hash.
    """
    encode = _Encoder()
    text = encode(("pytato-program", STORE_VERSION, _source_digest(),
                   _dependency_versions(), _tuning_constants(),
                   graph_key(roots, order),
                   tuple((name, parameters[name])
                         for name in sorted(parameters))))
    return hashlib.sha256(text.encode()).hexdigest()


def scheduled_key(base_key: str, **parameters: object) -> str:
    """The key of the program stored under *base_key* (the key of a
    lowered, unscheduled translation unit, which names no device) as
    scheduled with *parameters* (values with persistent hashes: the
    :class:`~pytato.target.loopy.device.DeviceInfo` of the device it is
    scheduled for, the loopy target, the user's inames, ...). Programs
    whose schedule is deferred to their first call on a device (see
    :class:`~pytato.target.loopy.BoundPyOpenCLProgram`) store their
    scheduled unit and compiled code under it: a key per device, computed
    without hashing the graph again."""
    encode = _Encoder()
    text = encode(("pytato-scheduled-program", STORE_VERSION, base_key,
                   tuple((name, parameters[name])
                         for name in sorted(parameters))))
    return hashlib.sha256(text.encode()).hexdigest()

# }}}


# {{{ the store

_STORE: list[WriteOncePersistentDict[tuple[str, str], bytes]] = []


def store_enabled() -> bool:
    """Whether programs are looked up in and saved to the store (see the
    module documentation)."""
    flag = os.environ.get("PYTATO_NO_PROGRAM_STORE", "")
    return _loopy_caching_enabled() and flag in ("", "0")


def _loopy_caching_enabled() -> bool:
    """:data:`loopy.CACHING_ENABLED`; without importing :mod:`loopy`
    where it is not imported yet (the environment variables it reads)."""
    loopy = sys.modules.get("loopy")
    if loopy is not None:
        return bool(loopy.CACHING_ENABLED)
    return not (strtobool(os.environ.get("LOOPY_NO_CACHE", "false"))
                or strtobool(os.environ.get("CG_NO_CACHE", "false")))


def _store() -> WriteOncePersistentDict[tuple[str, str], bytes]:
    if not _STORE:
        store: WriteOncePersistentDict[tuple[str, str], bytes] = (
            WriteOncePersistentDict(
                f"pytato-program-store-v{STORE_VERSION}",
                key_builder=KeyBuilder(),
                container_dir=(os.environ.get("PYTATO_PROGRAM_STORE_DIR")
                               or None),
                safe_sync=False))
        _STORE.append(store)
        limit_cache_memory(SQLITE_CACHE_KIB)
    return _STORE[0]


# {{{ memory of long-running processes

SQLITE_CACHE_KIB = 4096
"""The page cache (in KiB) of the :mod:`sqlite3` connections of the store
and of :mod:`loopy`'s on-disk caches, set when the store is first used
(:mod:`pytools` sets 64 MB per persistent dictionary)."""


def _set_sqlite_cache(pdict: object, kib: int) -> None:
    conn = getattr(pdict, "conn", None)
    if conn is not None:
        conn.execute(f"PRAGMA cache_size = -{int(kib)}")


def _persistent_dicts() -> list[object]:
    # (loopy's caches exist only where loopy.tools is imported)
    tools = sys.modules.get("loopy.tools")
    return [*getattr(tools, "caches", ()), *_STORE]


def limit_cache_memory(kib: int = SQLITE_CACHE_KIB) -> None:
    """Bound the page cache of the :mod:`sqlite3` connection of each of
    :mod:`loopy`'s on-disk caches and of the program store to *kib* KiB
    (:mod:`pytools` sets 64 MB each, which a long-running process
    generating many programs fills)."""
    for pdict in _persistent_dicts():
        _set_sqlite_cache(pdict, kib)


def release_cache_memory() -> None:
    """Empty the in-memory caches of code generation:
    :data:`~pytato.target.loopy.PROGRAM_CACHE`, the in-memory LRUs of the
    store and of :mod:`loopy`'s caches, :mod:`loopy`'s memo of expression
    dependencies, and the :mod:`sqlite3` page caches behind the on-disk
    caches (``PRAGMA shrink_memory``). Programs already generated keep
    working; later generations find results on disk or regenerate
    them."""
    PROGRAM_CACHE.clear()
    loopy = sys.modules.get("loopy")
    if loopy is not None:
        loopy.clear_in_mem_caches()
    for pdict in _STORE:
        pdict.clear_in_mem_cache()
    trim_loopy_memos(0)
    for cache in _persistent_dicts():
        conn = getattr(cache, "conn", None)
        if conn is not None:
            conn.execute("PRAGMA shrink_memory")

# }}}


def _rebuild_kernel(cls: type[LoopKernel], attributes: dict[str, object]
                    ) -> LoopKernel:
    """A :class:`loopy.LoopKernel` from its attributes, as
    :meth:`loopy.LoopKernel.__setstate__` restores it (without a stored
    persistent hash: it is computed if it is ever needed)."""
    # (loopy is imported by now: unpickling the kernel's class did it)
    from loopy.kernel.tools import SetOperationCacheManager
    kernel = object.__new__(cls)
    for name, value in attributes.items():
        object.__setattr__(kernel, name, value)
    object.__setattr__(kernel, "_cache_manager", SetOperationCacheManager())
    return kernel


def _reduce_kernel(kernel: LoopKernel) -> tuple[
        Callable[[type[LoopKernel], dict[str, object]], LoopKernel],
        tuple[type[LoopKernel], dict[str, object]]]:
    return (_rebuild_kernel, (type(kernel), {
        f.name: getattr(kernel, f.name)
        for f in dataclasses.fields(kernel)
        if hasattr(kernel, f.name) and not f.name.startswith("_")}))


def _dumps(value: object) -> bytes:
    r"""*value* pickled, with :class:`loopy.LoopKernel`\ s pickled by their
    attributes. (:mod:`loopy`'s own pickling of a kernel computes its
    persistent hash first, for its caches, which look kernels up by hash:
    most of the time of pickling a large DAG's program. The store looks
    programs up by graph, not by kernel.) The garbage collector is off
    meanwhile: pickling makes short-lived objects (the states of records)
    that each 700 of them started a collection, which in a process that
    has just generated a large program walked millions of objects (most
    of the time of saving the run facts of the 10 000-node DAG in a cold
    process)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    loopy_kernel = sys.modules.get("loopy.kernel")
    if loopy_kernel is not None:  # (else no kernel is there to pickle)
        pickler.dispatch_table = {
            **copyreg.dispatch_table, loopy_kernel.LoopKernel: _reduce_kernel}
    enabled = gc.isenabled()
    gc.disable()
    try:
        pickler.dump(value)
    finally:
        if enabled:
            gc.enable()
    return buf.getvalue()


def _loads(data: bytes) -> Any:
    """*data* unpickled with Python's garbage collector off. Unpickling
    makes no garbage, only objects that live on, but each 700 of them
    started a collection, which walked the objects made so far: most of
    the time of loading the scheduled unit of the 10 000-node DAG of
    ``benchmarks/bench_codegen.py``."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        value = pickle.loads(data)
        _promote_young_objects()
        return value
    finally:
        if enabled:
            gc.enable()


def _promote_young_objects() -> None:
    """Move the objects the collector tracks into its oldest generation
    without walking them (:func:`gc.freeze` then :func:`gc.unfreeze`),
    unless the process has frozen objects of its own (which this would
    unfreeze). Objects just unpickled live as long as the program that
    holds them; in the young generations each would be walked by two
    collections before reaching the oldest (a visible cost after the
    scheduled unit of the 10 000-node DAG was loaded).
    Objects moved there are still collected, by the collector's full
    collections."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def load(key: str, part: str) -> Any:
    """The *part* (e.g. ``"unit"``) of the program stored under *key*, or
    None if there is none (or it cannot be read)."""
    data = load_data(key, part)
    if data is None:
        return None
    try:
        return _loads(data)
    except Exception as e:  # an unreadable entry: generate anew
        _logger.warning("program store: cannot read %s of %s (%s: %s)",
                        part, key[:12], type(e).__name__, e)
        return None


def load_data(key: str, part: str) -> bytes | None:
    """The *part* of the program stored under *key* as it is stored (to
    unpickle with :func:`loads`), or None if there is none."""
    try:
        return _store()[key, part]
    except KeyError:
        return None
    except Exception as e:  # an unreadable entry: generate anew
        _logger.warning("program store: cannot read %s of %s (%s: %s)",
                        part, key[:12], type(e).__name__, e)
        return None


def loads(data: bytes) -> Any:
    """An entry of :func:`load_data` unpickled (as :func:`load` does)."""
    return _loads(data)


def save(key: str, part: str, value: object) -> None:
    """Store *value* as the *part* of the program under *key* (if it is not
    there yet). Failures (e.g. a read-only folder) are logged, not
    raised: the store only saves time."""
    try:
        _store().store_if_not_present((key, part), _dumps(value))
    except Exception as e:
        _logger.warning("program store: cannot save %s of %s (%s: %s)",
                        part, key[:12], type(e).__name__, e)

# }}}

# vim: foldmethod=marker
