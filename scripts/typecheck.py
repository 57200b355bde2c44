"""Type-check ``pytato/`` with mypy, as configured in ``pyproject.toml``.

Run by ``scripts/run-tests.sh`` before the tests; exits non-zero if mypy
reports any error (or cannot run), printing its report.

    python scripts/typecheck.py
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from mypy import api
    except ImportError:
        print("typecheck: mypy is not installed (pip install -e '.[test]')",
              file=sys.stderr)
        return 1
    stdout, stderr, status = api.run([])  # (the files of pyproject.toml)
    if status != 0:
        print(stdout + stderr, file=sys.stderr)
        return status
    print(f"typecheck: {stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
