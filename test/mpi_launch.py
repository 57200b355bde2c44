"""Launching Python scripts on several MPI ranks, with MPICH or Open MPI.

The two families of MPI implementations take different ``mpiexec`` flags:

* Open MPI refuses to start more ranks than there are cores unless given
  ``--oversubscribe``, forwards environment variables named with ``-x NAME``
  and refuses to run as root unless given ``--allow-run-as-root`` (and the
  environment variables ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
  ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``, which older versions read instead).
* MPICH (and its derivatives: Intel MPI, MVAPICH) runs any number of ranks
  and sets variables with ``-genv NAME VALUE`` (its ranks also inherit the
  environment of ``mpiexec``).

:func:`mpi_implementation` tells them apart from ``mpiexec --version``
(falling back to the library :mod:`mpi4py` is built against), and
:func:`mpiexec_command` builds the command line.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Literal


MPIImplementation = Literal["openmpi", "mpich", "unknown"]

_OPENMPI_MARKERS = ("open mpi", "openrte", "open-mpi.org", "prrte")
_MPICH_MARKERS = ("hydra", "mpich", "intel(r) mpi", "mvapich")

#: The environment variables that let Open MPI run as root.
OPENMPI_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1",
                    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def implementation_from_version_text(text: str) -> MPIImplementation:
    """The family of the MPI implementation that printed *text* (the output
    of ``mpiexec --version`` or :func:`mpi4py.MPI.Get_library_version`)."""
    lowered = text.lower()
    if any(marker in lowered for marker in _OPENMPI_MARKERS):
        return "openmpi"
    if any(marker in lowered for marker in _MPICH_MARKERS):
        return "mpich"
    return "unknown"


def _run_text(cmd: Sequence[str]) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr


@functools.cache
def mpi_implementation(mpiexec: str,
                       python: str = sys.executable) -> MPIImplementation:
    """The family of the MPI implementation of the launcher *mpiexec*: from
    its ``--version`` output, else from the library that :mod:`mpi4py`
    (imported by *python*, without initializing MPI) is built against.
    (Cached per launcher.)"""
    found = implementation_from_version_text(_run_text([mpiexec, "--version"]))
    if found != "unknown":
        return found
    return implementation_from_version_text(_run_text([
        python, "-c",
        "import mpi4py; mpi4py.rc.initialize = False; "
        "from mpi4py import MPI; print(MPI.Get_library_version())"]))


def mpiexec_command(mpiexec: str, nranks: int, argv: Sequence[str], *,
                    implementation: MPIImplementation,
                    env_vars: Mapping[str, str] | None = None,
                    as_root: bool | None = None
                    ) -> tuple[list[str], dict[str, str]]:
    """The command running *argv* on *nranks* ranks with the launcher
    *mpiexec* of *implementation*, passing the environment variables
    *env_vars* to all ranks, and the variables to add to the environment
    of the launcher itself.

    :arg as_root: whether the launcher runs as root (Open MPI then needs
        permission); by default, whether this process does.
    """
    env_vars = dict(env_vars or {})
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cmd = [mpiexec, "-n", str(nranks)]
    launcher_env = dict(env_vars)
    if implementation == "openmpi":
        cmd.append("--oversubscribe")
        if as_root:
            cmd.append("--allow-run-as-root")
            launcher_env.update(OPENMPI_ROOT_ENV)
        for name in env_vars:
            # (the value is taken from the launcher's environment)
            cmd.extend(["-x", name])
    elif implementation == "mpich":
        for name, value in env_vars.items():
            cmd.extend(["-genv", name, value])
    # else: the ranks inherit the launcher's environment
    cmd.extend(argv)
    return cmd, launcher_env
