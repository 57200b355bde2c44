#!/usr/bin/env bash
# Set up a development environment for pytato.  Idempotent: a second run on
# an unchanged checkout only re-checks the OpenCL device (a few seconds).
#
#   - creates .venv (python3 -m venv) if it is missing,
#   - installs pytato editable with the test extras (pip install -e '.[test]'),
#   - makes sure an OpenCL CPU device is available: Debian's PoCL
#     (pocl-opencl-icd) is preferred; pip's pocl-binary-distribution is only a
#     fallback,
#   - checks that pyopencl sees a device and prints which one is used.
#
# Environment: PYTHON (interpreter used to create the venv, default python3).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$(pwd)
VENV="$REPO_ROOT/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.pytato-setup-stamp"

log() { printf '[setup] %s\n' "$*"; }

# {{{ python venv

PYTHON=${PYTHON:-python3}
if [ ! -x "$VPY" ]; then
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        log "error: $PYTHON is older than Python 3.11" >&2
        exit 1
    fi
    log "creating virtual environment in .venv"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi

want_stamp=$( (cat pyproject.toml; "$VPY" -VV) | sha256sum | cut -d' ' -f1)
have_stamp=$(cat "$STAMP" 2>/dev/null || true)
if [ "$want_stamp" = "$have_stamp" ] \
        && "$VPY" -c 'import importlib.metadata as m; m.version("pytato")' \
            2>/dev/null; then
    log "pytato already installed in .venv (pyproject.toml unchanged)"
else
    log "installing pytato (editable) with test extras"
    "$VPY" -m pip install -q -e '.[test]'
    echo "$want_stamp" > "$STAMP"
fi
# pytato's bytecode, as pip compiles the packages it installs: an editable
# install leaves it to the first import, which never writes it where
# PYTHONDONTWRITEBYTECODE is set (each process then compiles pytato's
# modules again: 0.19 of 0.49 s of `import pytato` here); Python
# compiles a module again wherever its source is newer
"$VPY" -m compileall -q pytato >/dev/null || true

# }}}

# {{{ OpenCL device

have_system_icd() {
    [ -e /etc/OpenCL/vendors/pocl.icd ]
}

install_system_pocl() {
    command -v apt-get >/dev/null 2>&1 || return 1
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo -n"
        else
            return 1
        fi
    fi
    log "installing PoCL and graphviz with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || return 1
    $sudo apt-get install -y -qq --no-install-recommends \
        pocl-opencl-icd ocl-icd-libopencl1 graphviz </dev/null || return 1
}

install_pip_pocl() {
    log "falling back to pip's pocl-binary-distribution"
    "$VPY" -m pip install -q pocl-binary-distribution
}

if have_system_icd && command -v dot >/dev/null 2>&1; then
    log "system PoCL ICD and graphviz already present"
elif install_system_pocl; then
    :
else
    log "warning: could not install PoCL/graphviz with apt-get" >&2
    if ! have_system_icd; then
        install_pip_pocl || log "warning: pip install of PoCL failed" >&2
    fi
    command -v dot >/dev/null 2>&1 \
        || log "warning: graphviz 'dot' not found; picture tests may fail" >&2
fi

# Prints every device pyopencl sees and the one the tests default to
# (see test/conftest.py: PYOPENCL_TEST / PYOPENCL_CTX override it).
check_devices() {
    "$VPY" - <<'PYEOF'
import sys

import pyopencl as cl

try:
    platforms = cl.get_platforms()
except cl.Error as e:
    print(f"[setup] no OpenCL platform found: {e}", file=sys.stderr)
    sys.exit(1)

devices = [(p, d) for p in platforms for d in p.get_devices()]
if not devices:
    print("[setup] OpenCL platforms found, but no devices", file=sys.stderr)
    sys.exit(1)

for p, d in devices:
    kind = "CPU" if d.type & cl.device_type.CPU else (
        "GPU" if d.type & cl.device_type.GPU else "other")
    print(f"[setup] found: {p.name} / {d.name} ({kind})")


def rank(pd):
    p, d = pd
    return (not (d.type & cl.device_type.CPU),
            "Portable Computing Language" not in p.name)


p, d = min(devices, key=rank)
print(f"[setup] default device: {p.name} / {d.name} "
      f"(override with PYOPENCL_TEST or PYOPENCL_CTX)")
PYEOF
}

if ! check_devices; then
    if have_system_icd || ! install_pip_pocl || ! check_devices; then
        log "error: no usable OpenCL device; install an ICD such as" \
            "Debian's pocl-opencl-icd" >&2
        exit 1
    fi
fi

# }}}

log "done"

# vim: foldmethod=marker
