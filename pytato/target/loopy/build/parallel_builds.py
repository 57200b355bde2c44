"""Device code built as several OpenCL programs at once, and the worker
processes that code generation and builds run in. Imports :mod:`pyopencl`,
not :mod:`loopy` (a process running programs from the program store uses
it without loopy).

.. autofunction:: build_kernels
.. autofunction:: chunk_sources
.. autofunction:: build_chunk_count
.. autofunction:: split_device_code
.. autofunction:: start_processes
.. autofunction:: stop_processes
.. autofunction:: run_in_processes
.. autofunction:: count_from_env
.. autodata:: BUILD_CHUNKS_ENV
.. autodata:: BUILD_PARALLEL_ENV
.. autodata:: MIN_CHUNK_BYTES
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyopencl as cl

from pytato.target.loopy.build.binaries import build_programs
from pytato.target.loopy.build.child_processes import start_child
from pytato.target.loopy.build.launch_once import device_index


__all__ = [
    "BUILD_CHUNKS_ENV", "BUILD_PARALLEL_ENV", "MIN_CHUNK_BYTES",
    "build_chunk_count", "build_kernels", "chunk_sources", "count_from_env",
    "run_in_processes", "split_device_code", "start_processes",
    "stop_processes",
]

_logger = logging.getLogger("pytato.target.loopy")


# {{{ chunked, parallel OpenCL builds

#: Environment variable setting the number of programs the device code of a
#: program is built as (see :func:`build_kernels`): an integer (``1``: one
#: program, as :mod:`loopy` builds it), or unset for the default.
BUILD_CHUNKS_ENV = "PYTATO_BUILD_CHUNKS"

#: Environment variable choosing how the programs of a chunked build are
#: built at once (see :func:`build_kernels`): ``threads`` (the default:
#: :mod:`pyopencl` releases the GIL while the OpenCL compiler runs) or
#: ``processes`` (each program built in a process of its own, for OpenCL
#: implementations whose compiler does not run concurrently in one
#: process; the binaries are loaded in the calling process).
BUILD_PARALLEL_ENV = "PYTATO_BUILD_PARALLEL"

#: Kernel source bytes per chunk below which the device code is not split
#: further (see :func:`build_chunk_count`).
MIN_CHUNK_BYTES = 64 * 1024

_KERNEL_HEADS = ("__kernel ", "__kernel\t", "__kernel\n", "kernel ")
_DECLARATION_HEADS = ("typedef", "struct", "union", "enum")


def _skip_literal(code: str, i: int) -> int:
    """The index after the string or character literal starting at *i*."""
    quote = code[i]
    i += 1
    n = len(code)
    while i < n:
        c = code[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            break
        i += 1
    raise ValueError("unterminated literal")


#: The characters where :func:`_top_level_items` has something to do
_SPECIAL_CHARS = re.compile(r"[\n#/\"'{}();]")


def _top_level_items(code: str) -> list[str]:
    """The top-level items of the C source *code*, in order: preprocessor
    directives (with their continuation lines), declarations (up to their
    ``;``), function definitions (up to their closing brace) and any text
    between those (e.g. macro invocations). Their concatenation is *code*,
    up to whitespace.

    :raises ValueError: if the braces, parentheses, comments or literals
        do not balance.
    """
    items: list[str] = []
    n = len(code)
    i = start = 0
    depth = paren = 0

    def flush(end: int) -> None:
        nonlocal start
        if code[start:end].strip():
            items.append(code[start:end])
        start = end

    while True:
        # jump to the next character that matters (the others are text)
        m = _SPECIAL_CHARS.search(code, i)
        if m is None:
            break
        i = m.start()
        c = code[i]
        if c == "\n":
            i += 1
            continue
        if c == "#" and depth == 0 and paren == 0 \
                and not code[code.rfind("\n", 0, i) + 1:i].strip(" \t\r\f\v"):
            # a directive: the first thing on its line
            if code[start:i].lstrip().startswith(_KERNEL_HEADS):
                raise ValueError("directive inside a kernel's header")
            flush(i)
            end = i
            while True:
                end = code.find("\n", end)
                if end < 0:
                    end = n
                    break
                if code[end - 1] == "\\" or code[end - 2:end] == "\\\r":
                    end += 1
                    continue
                break
            flush(end)
            i = end
            continue
        if code.startswith("//", i):
            end = code.find("\n", i)
            i = n if end < 0 else end
            continue
        if code.startswith("/*", i):
            end = code.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment")
            i = end + 2
            continue
        if c in "\"'":
            i = _skip_literal(code, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced braces")
            if depth == 0 and paren == 0 and not code[start:i].lstrip(
                    ).startswith(_DECLARATION_HEADS):
                flush(i + 1)  # a function definition ends here
        elif c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
            if paren < 0:
                raise ValueError("unbalanced parentheses")
        elif c == ";" and depth == 0 and paren == 0:
            flush(i + 1)
        i += 1
    if depth or paren:
        raise ValueError("unbalanced braces or parentheses")
    flush(n)
    return items


def split_device_code(code: str) -> tuple[str, list[str]] | None:
    """Split the OpenCL C source *code* into ``(shared, kernels)``: the
    text of each kernel definition, in order, and everything else
    (preprocessor directives, type definitions, helper functions and the
    preambles, in their order), which every kernel may need. *None* if the
    source cannot be split (unbalanced text)."""
    try:
        items = _top_level_items(code)
    except ValueError:
        return None
    shared = []
    kernels = []
    for item in items:
        if item.lstrip().startswith(_KERNEL_HEADS):
            kernels.append(item.strip())
        else:
            shared.append(item.strip("\n"))
    return "\n".join(shared) + "\n", kernels


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover
        return os.cpu_count() or 1


def count_from_env(name: str, most: int) -> int | None:
    """The integer value of the environment variable *name*, between 1 and
    *most*, or None if it is unset (or not an integer: logged)."""
    env = os.environ.get(name, "").strip()
    if env:
        try:
            return max(1, min(int(env), most))
        except ValueError:
            _logger.warning("%s=%r is not an integer; ignored", name, env)
    return None


def build_chunk_count(kernel_sizes: Sequence[int]) -> int:
    """The number of programs to build kernels of source sizes
    *kernel_sizes* (bytes) as: one per :data:`MIN_CHUNK_BYTES` of kernel
    source, at most one per kernel and one per usable CPU (a program of
    one kernel, or of a small source, is built as one program).
    :data:`BUILD_CHUNKS_ENV` overrides it (capped to the number of
    kernels)."""
    nkernels = len(kernel_sizes)
    if nkernels <= 1:
        return 1
    from_env = count_from_env(BUILD_CHUNKS_ENV, nkernels)
    if from_env is not None:
        return from_env
    return max(1, min(nkernels, _usable_cpus(),
                      sum(kernel_sizes) // MIN_CHUNK_BYTES))


def _partition(sizes: Sequence[int], nchunks: int) -> list[list[int]]:
    """Split the indices of *sizes* into *nchunks* runs of consecutive
    indices of about equal total size (none empty)."""
    total = sum(sizes)
    chunks: list[list[int]] = []
    current: list[int] = []
    acc = 0
    for i, size in enumerate(sizes):
        current.append(i)
        acc += size
        left = len(sizes) - i - 1
        needed = nchunks - len(chunks) - 1  # chunks still to start
        if needed and (acc >= total * (len(chunks) + 1) / nchunks
                       or left == needed):
            chunks.append(current)
            current = []
    if current:
        chunks.append(current)
    return chunks


# a build process: reads (platform number, device number, source, options)
# pickled on stdin, writes the binary on stdout (imports only pyopencl)
_BUILD_PROCESS = """
import pickle, sys
import pyopencl as cl
platform, device, source, options = pickle.load(sys.stdin.buffer)
device = cl.get_platforms()[platform].get_devices()[device]
program = cl.Program(cl.Context([device]), source).build(options=options)
sys.stdout.buffer.write(program.binaries[0])
"""


def start_processes(script: str, count: int, args: Sequence[str] = ()
                    ) -> list[subprocess.Popen[bytes]]:
    """Start *count* new Python processes running *script* (``python -c``,
    with the arguments *args*; not forked: the calling process may hold an
    OpenCL context), each to read its input on its standard input (see
    :func:`run_in_processes` and
    :class:`~pytato.target.loopy.build.job_processes.JobProcesses`).
    Starting them early lets them import what they need while the caller
    prepares their inputs. They exit when the calling process does
    (:mod:`~pytato.target.loopy.build.child_processes`)."""
    return [start_child(script, args, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(count)]


def stop_processes(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Kill the processes of *procs* that still run, and wait for them."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_in_processes(script: str, inputs: Sequence[bytes], what: str, *,
                     error_chars: int = 2000) -> list[bytes]:
    """Run the Python *script* (``python -c``) in a new process for each
    of *inputs* (not forked: the calling process may hold an OpenCL
    context), all at once, each reading its input on its standard input;
    return what each wrote on its standard output.

    :raises RuntimeError: naming *what* the processes do, with the last
        *error_chars* characters of the standard error of the first failed
        process (one that exited with an error or wrote nothing). The
        processes left are killed.
    """
    procs = start_processes(script, len(inputs))

    start = time.perf_counter()

    def talk(k: int) -> tuple[bytes, bytes, int]:
        # a thread a process: a write to one never waits for another
        # process to read (a process that unpickles its input imports
        # modules as it reads), nor a full pipe for the parent's read
        out, err = procs[k].communicate(inputs[k])
        _logger.debug("%s process %d done after %.2f s%s", what, k,
                      time.perf_counter() - start,
                      f": {err.decode(errors='replace')[-error_chars:]}"
                      if err else "")
        return out, err, procs[k].returncode

    try:
        with ThreadPoolExecutor(max(1, len(procs)),
                                thread_name_prefix="pytato-process") as pool:
            answers = list(pool.map(talk, range(len(procs))))
    finally:
        stop_processes(procs)
    outputs = []
    for out, err, returncode in answers:
        if returncode != 0 or not out:
            raise RuntimeError(f"{what} process failed: "
                               + err.decode(errors="replace")[-error_chars:])
        outputs.append(out)
    return outputs


def _build_in_processes(context: cl.Context, sources: Sequence[str],
                        options: str | Sequence[str] | None
                        ) -> list[cl.Program]:
    (device,) = context.devices
    index = device_index(device)
    binaries = run_in_processes(
        _BUILD_PROCESS,
        [pickle.dumps((*index, source, options)) for source in sources],
        "build")

    def load(binary: bytes) -> cl.Program:
        return cl.Program(context, [device], [binary]).build(options=options)

    # loading a binary may compile too (NVIDIA's are PTX): in threads
    with ThreadPoolExecutor(len(binaries),
                            thread_name_prefix="pytato-load") as pool:
        return list(pool.map(load, binaries))


def chunk_sources(code: str, nchunks: int | None = None) -> list[str]:
    """The sources of the programs :func:`build_kernels` builds for the
    OpenCL C source *code*: each with some of its kernels and all that
    they share, *nchunks* of them (default: :func:`build_chunk_count`);
    ``[code]`` where one program is built."""
    split = split_device_code(code)
    if split is None:
        return [code]
    shared, kernel_texts = split
    if nchunks is None:
        nchunks = build_chunk_count([len(k) for k in kernel_texts])
    nchunks = min(nchunks, len(kernel_texts))
    if nchunks <= 1:
        return [code]
    return [shared + "\n" + "\n\n".join(kernel_texts[i] for i in chunk)
            + "\n"
            for chunk in _partition([len(k) for k in kernel_texts], nchunks)]


def build_kernels(context: cl.Context, code: str,
                  options: str | Sequence[str] | None = None,
                  nchunks: int | None = None,
                  parallel: str | None = None
                  ) -> dict[str, cl.Kernel]:
    """Build the OpenCL C source *code* on *context* with the build
    *options*, and return its kernels by name.

    Programs are built from the binaries of earlier builds where the
    program store has them (:func:`~pytato.target.loopy.build.binaries.build_programs`).
    The kernels may be built as several programs at once (in threads:
    :mod:`pyopencl` releases the GIL while the OpenCL compiler runs): each
    program has some of the kernels, with all the rest of the source
    (preambles, type definitions and helper functions) that they may use.
    Device compilers that take a long time over one large source (NVIDIA's
    takes minutes over the hundreds of kernels of a large graph) then run
    on several cores.

    :arg parallel: ``"threads"`` or ``"processes"`` (see
        :data:`BUILD_PARALLEL_ENV`, the default; processes only for
        contexts of one device).
    :arg nchunks: the number of programs; by default
        :func:`build_chunk_count` of the kernels' sizes. With one (or if
        the source cannot be split), the source is built as one program,
        as :mod:`loopy` builds it. If a program of a split source fails to
        build, the whole source is built as one program (to report its
        errors as :mod:`loopy`'s build would).
    """
    sources = chunk_sources(code, nchunks)
    if len(sources) == 1:
        (program,) = build_programs(context, [code], options)
        return _program_kernels(program)
    if parallel is None:
        parallel = os.environ.get(BUILD_PARALLEL_ENV, "").strip() or "threads"
    if parallel not in ("threads", "processes"):
        raise ValueError(f"parallel: expected 'threads' or 'processes', got "
                         f"{parallel!r}")
    try:
        if parallel == "processes" and len(context.devices) == 1:
            programs = _build_in_processes(context, sources, options)
        else:
            programs = build_programs(context, sources, options)
    except Exception:  # the one-program build reports it
        _logger.info("building the source as %d programs failed; building "
                     "it as one", len(sources))
        return _program_kernels(cl.Program(context, code).build(
            options=options))
    kernels: dict[str, cl.Kernel] = {}
    for program in programs:
        for name, kernel in _program_kernels(program).items():
            if name in kernels:  # pragma: no cover (a splitting error)
                raise AssertionError(f"kernel {name!r} in two programs")
            kernels[name] = kernel
    _logger.info("built %d kernels as %d programs", len(kernels),
                 len(programs))
    return kernels


def _program_kernels(program: cl.Program) -> dict[str, cl.Kernel]:
    return {name: getattr(program, name)
            for name in program.kernel_names.split(";") if name}

# }}}

# vim: foldmethod=marker
