#!/usr/bin/env bash
# Set up the environment (see scripts/setup.sh), type-check pytato/ with mypy
# (scripts/typecheck.py: any error fails), then run the test suite on two
# workers.  Extra arguments are
# passed to pytest, e.g.
#   bash scripts/run-tests.sh test/test_codegen.py -k einsum
# The OpenCL device is chosen by test/conftest.py (PYOPENCL_TEST/PYOPENCL_CTX).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/python scripts/typecheck.py
exec .venv/bin/python -m pytest -n 2 -q "$@"
