"""Type-check ``pytato/`` with mypy, as configured in ``pyproject.toml``.

Run by ``scripts/run-tests.sh`` before the tests.  Exits non-zero if mypy
reports an error in a module outside :data:`NOT_YET_TYPED`; the errors in
those packages are counted and printed as a summary, not failed on, until
they are typed (then remove them from the tuple, and this checks all of
``pytato/``, as plain ``mypy`` does).

    python scripts/typecheck.py
"""

from __future__ import annotations

import re
import sys


#: Packages whose mypy errors do not (yet) fail the check (path prefixes).
NOT_YET_TYPED: tuple[str, ...] = ("pytato/target/loopy/",)

_ERROR_RE = re.compile(r"^(?P<path>[^:\n]+):\d+: error: ", re.MULTILINE)


def main() -> int:
    try:
        from mypy import api
    except ImportError:
        print("typecheck: mypy is not installed (pip install -e '.[test]')",
              file=sys.stderr)
        return 1
    stdout, stderr, status = api.run([])  # (the files of pyproject.toml)
    if status not in (0, 1):  # (2: mypy itself failed)
        print(stdout + stderr, file=sys.stderr)
        return status
    failing = []
    pending = 0
    for line in stdout.splitlines():
        match = _ERROR_RE.match(line)
        if match is None:
            continue
        if match.group("path").replace("\\", "/").startswith(NOT_YET_TYPED):
            pending += 1
        else:
            failing.append(line)
    for line in failing:
        print(line)
    print(f"typecheck: {len(failing)} mypy error(s) in checked modules; "
          f"{pending} in modules not yet typed ({', '.join(NOT_YET_TYPED)})")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
