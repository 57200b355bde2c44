#!/usr/bin/env bash
# Set up the environment (see scripts/setup.sh), then run the demo: it builds
# a graph, prints the generated OpenCL, runs it on the default device and
# checks the result against numpy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/demo.py "$@"
