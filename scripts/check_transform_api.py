"""Check the ``## pytato.transform*`` sections of REFERENCE-API.md: each name
imports from its module, and its parameters (names, order, kinds) match;
extra keyword-only parameters are allowed. Also checks the ``map_*``
methods listed for mapper classes.

Usage: python scripts/check_transform_api.py [path/to/REFERENCE-API.md]
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys


LINE_RE = re.compile(
    r"^- `(\w+)` (?:class|function|data|module)\b(?: generic)? `\((.*)\)")


def parse_params(sig: str) -> list[tuple[str, str]]:
    """(name, kind) for each parameter of a reference signature."""
    if sig.strip() in ("", "..."):
        return []
    parts: list[str] = []
    depth = 0
    cur = ""
    quote = None
    for ch in sig:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    out = []
    kw_only = False
    for p in parts:
        if p == "*":
            kw_only = True
            continue
        if p == "/":
            out = [(n, "POSITIONAL_ONLY") for n, _ in out]
            continue
        if p.startswith("**"):
            out.append((p[2:].split(":")[0].strip(), "VAR_KEYWORD"))
            continue
        if p.startswith("*"):
            out.append((p[1:].split(":")[0].strip(), "VAR_POSITIONAL"))
            kw_only = True
            continue
        name = re.split(r"[:=]", p)[0].strip()
        out.append((name, "KEYWORD_ONLY" if kw_only else "POSITIONAL_OR_KEYWORD"))
    return out


def check(path: str) -> int:
    text = open(path).read().splitlines()
    section = None
    results = []
    last_cls = None
    for line in text:
        if line.startswith("## "):
            section = line[3:].strip()
            last_cls = None
            continue
        if not section or not (section == "pytato.transform"
                               or section.startswith("pytato.transform.")):
            continue
        m = LINE_RE.match(line)
        if m:
            name, sig = m.groups()
            full = f"{section}.{name}"
            try:
                mod = importlib.import_module(section)
                obj = getattr(mod, name)
            except Exception as e:
                results.append((full, f"import: {type(e).__name__}: {e}"))
                last_cls = None
                continue
            last_cls = obj
            if sig.strip() == "...":   # exceptions: any constructor
                results.append((full, None))
                continue
            try:
                target = obj.__init__ if inspect.isclass(obj) else obj
                ours = [(p.name, p.kind.name) for p in
                        inspect.signature(target).parameters.values()]
                if inspect.isclass(obj):
                    ours = ours[1:]  # self
            except (TypeError, ValueError) as e:
                results.append((full, f"signature: {e}"))
                continue
            ref = parse_params(sig)
            # extra keyword-only parameters are fine; a **kwargs we have is
            # fine if the reference has none
            ours_cmp = [(n, k) for n, k in ours
                        if k != "KEYWORD_ONLY" or (n, k) in ref]
            if not any(k == "VAR_KEYWORD" for _, k in ref):
                ours_cmp = [(n, k) for n, k in ours_cmp if k != "VAR_KEYWORD"]
            if inspect.isclass(obj) and obj.__init__ is object.__init__:
                ours_cmp = []
            if ours_cmp != ref:
                results.append((full, f"params: ours {ours_cmp} != ref {ref}"))
            else:
                results.append((full, None))
            continue
        mm = re.match(r"^\s+- methods: (.*)$", line)
        if mm and last_cls is not None:
            methods = [x.strip() for x in mm.group(1).split(",")]
            missing = [x for x in methods if not hasattr(last_cls, x)]
            if missing:
                results.append((f"{section}.{last_cls.__name__} methods",
                                f"missing {missing}"))
    bad = [(n, why) for n, why in results if why]
    names = [n for n, _ in results if not n.endswith(" methods")]
    ok_names = [n for n, why in results if not why and not n.endswith(" methods")]
    for n, why in bad:
        print(f"MISMATCH {n}: {why}")
    print(f"{len(ok_names)}/{len(names)} names match; "
          f"{sum(1 for n, _ in bad if n.endswith(' methods'))} method-list "
          "mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(check(sys.argv[1] if len(sys.argv) > 1
                   else "/work/shared/REFERENCE-API.md"))
