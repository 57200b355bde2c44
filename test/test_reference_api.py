"""Compatibility with the reference (upstream) pytato's public API.

``../shared/REFERENCE-API.md`` (beside the repository) lists every public
module and name of the reference pytato, with its kind and call signature.
This test reads that list at test time and checks, per name, that

- the name imports from the module where the reference has it,
- it is of the same kind (class, function, module, type variable),
- its parameters match: the same names, order and kinds, with the same
  parameters optional (for classes, the constructor's signature is
  compared). Ours may accept more, as long as every call that is valid
  against the reference binds the same way: extra parameters with
  defaults (keyword-only, or positional after all of the reference's
  positional ones when the reference has no ``*args``), a reference's
  keyword-only parameter also accepted positionally after them, a
  positional-only one also accepted by keyword,
- classes the reference marks *generic* are subscriptable, exceptions
  derive from the same built-in exceptions, and classes derive from the
  interfaces clients test for (:class:`pytools.tag.Taggable`,
  :class:`~collections.abc.Mapping`, :class:`enum.Enum`, ...),
- the methods and attributes the reference lists for a class exist.

The names of the final section ("Names that arraycontext, meshmode and grudge
import or use") must all import.

Names that are decided not to be provided, or to differ, are listed in
:data:`DECIDED_EXCEPTIONS` with the reason (also on the "Differences from
upstream" page of the documentation).
"""

from __future__ import annotations

import collections.abc
import enum
import importlib
import inspect
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytools.tag


REFERENCE = (Path(__file__).resolve().parent.parent.parent
             / "shared" / "REFERENCE-API.md")

_CLIENT_SECTION = "Names that arraycontext, meshmode and grudge import or use"


#: The decided exceptions: ``"module.name"`` (or ``"module.name.member"``
#: for a method/attribute) mapped to the reason it is not provided as the
#: reference has it. Documented in ``doc/upstream.rst``.
DECIDED_EXCEPTIONS: dict[str, str] = {
}


# {{{ parsing the reference

@dataclass(frozen=True)
class RefParam:
    name: str
    kind: inspect._ParameterKind
    has_default: bool


@dataclass(frozen=True)
class RefName:
    module: str
    name: str
    kind: str  # "class", "function", "module", "TypeVar", ...
    generic: bool
    #: ``None`` when the reference gives no signature (or ``(...)``)
    params: tuple[RefParam, ...] | None
    #: whether the signature was cut short in the list (only a prefix known)
    truncated: bool
    bases: tuple[str, ...]
    members: tuple[str, ...]

    @property
    def full_name(self) -> str:
        return f"{self.module}.{self.name}"


_NAME_LINE_RE = re.compile(
    r"^- `(?P<name>[^`]+)` (?P<kind>\w+)(?P<generic> generic)?"
    r"(?: `(?P<sig>.*)`?)?$")
_MEMBER_LINE_RE = re.compile(r"^  - (?:attributes|methods): (?P<members>.*)$")
_CLIENT_LINE_RE = re.compile(r"^- `(?P<name>[\w.]+)`\s*$")

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _split_top_level(text: str) -> tuple[list[str], int | None]:
    """Splits *text*, which starts after an opening parenthesis, at the
    commas outside quotes and brackets. Returns the pieces and the index of
    the closing parenthesis (``None`` if the text ends before it)."""
    pieces: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    start = 0
    for i, c in enumerate(text):
        if quote is not None:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in _OPEN:
            # '<' only opens '<class ...>'-like reprs of defaults, never
            # a comparison in a signature
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
        elif c == ")" and not stack:
            pieces.append(text[start:i])
            return pieces, i
        elif c == "," and not stack:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return pieces, None


def _has_top_level_default(piece: str) -> bool:
    depth = 0
    quote: str | None = None
    for c in piece:
        if quote is not None:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "=" and depth == 0:
            return True
    return False


def _parse_params(sig: str) -> tuple[tuple[RefParam, ...] | None, bool, str]:
    """Parses ``(params) -> 'ret'; bases: ...``. Returns the parameters
    (``None`` for ``(...)``), whether they were cut short, and the rest of
    the line after the closing parenthesis."""
    assert sig.startswith("("), sig
    pieces, close = _split_top_level(sig[1:])
    truncated = close is None
    rest = "" if close is None else sig[1 + close + 1:]
    if truncated:
        # the last piece may be cut in the middle
        pieces = pieces[:-1]
    pieces = [p.strip() for p in pieces]
    if pieces == ["..."]:
        return None, False, rest
    if pieces == [""]:
        pieces = []

    params: list[RefParam] = []
    if "/" in pieces:
        n_posonly = pieces.index("/")
    else:
        n_posonly = 0
    keyword_only = False
    for i, piece in enumerate(pieces):
        if piece == "/":
            continue
        if piece == "*":
            keyword_only = True
            continue
        name = re.match(r"\*{0,2}\w+", piece)
        assert name is not None, (sig, piece)
        pname = name.group(0)
        if pname.startswith("**"):
            kind = inspect.Parameter.VAR_KEYWORD
            pname = pname[2:]
        elif pname.startswith("*"):
            kind = inspect.Parameter.VAR_POSITIONAL
            pname = pname[1:]
            keyword_only = True
        elif keyword_only:
            kind = inspect.Parameter.KEYWORD_ONLY
        elif i < n_posonly:
            kind = inspect.Parameter.POSITIONAL_ONLY
        else:
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params.append(RefParam(pname, kind, _has_top_level_default(piece)))
    return tuple(params), truncated, rest


def _parse_bases(rest: str) -> tuple[str, ...]:
    match = re.search(r"bases: (.*)$", rest)
    if match is None:
        return ()
    return tuple(b.strip() for b in match.group(1).split(",")
                 if b.strip() and not b.strip().startswith(("-", "...")))


def parse_reference(text: str) -> tuple[list[RefName], list[str]]:
    """The names of the module sections, and the dotted names of the client
    section."""
    names: list[RefName] = []
    client_names: list[str] = []
    module: str | None = None
    in_client_section = False
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            in_client_section = title == _CLIENT_SECTION
            module = None if in_client_section else title
            continue
        if in_client_section:
            match = _CLIENT_LINE_RE.match(line)
            if match:
                client_names.append(match.group("name"))
            continue
        if module is None:
            continue
        match = _MEMBER_LINE_RE.match(line)
        if match and names and names[-1].module == module:
            members = tuple(m.strip() for m in match.group("members").split(",")
                            if m.strip())
            last = names[-1]
            names[-1] = RefName(last.module, last.name, last.kind, last.generic,
                                last.params, last.truncated, last.bases,
                                last.members + members)
            continue
        match = _NAME_LINE_RE.match(line)
        if match is None:
            continue
        sig = match.group("sig")
        params: tuple[RefParam, ...] | None = None
        truncated = False
        bases: tuple[str, ...] = ()
        if sig:
            sig = sig.rstrip("`")
            params, truncated, rest = _parse_params(sig)
            bases = _parse_bases(rest)
        names.append(RefName(module, match.group("name"), match.group("kind"),
                             bool(match.group("generic")), params, truncated,
                             bases, ()))
    return names, client_names


def _load() -> tuple[list[RefName], list[str]]:
    if not REFERENCE.exists():
        return [], []
    return parse_reference(REFERENCE.read_text())


_REF_NAMES, _CLIENT_NAMES = _load()

_skip_if_absent = pytest.mark.skipif(
    not REFERENCE.exists(),
    reason=f"the reference API list {REFERENCE} is absent (it lives in "
           "shared/ beside the repository)")

# }}}


# {{{ checks

def _exception_reason(key: str) -> str | None:
    return DECIDED_EXCEPTIONS.get(key)


def _import_name(module: str, name: str) -> Any:
    mod = importlib.import_module(module)
    try:
        return getattr(mod, name)
    except AttributeError:
        # a submodule not imported by its package's __init__
        return importlib.import_module(f"{module}.{name}")


def _resolve_dotted(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def _our_signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _is_var_only(params: tuple[RefParam, ...]) -> bool:
    return all(p.kind in (inspect.Parameter.VAR_POSITIONAL,
                          inspect.Parameter.VAR_KEYWORD) for p in params)


def compare_params(ref: tuple[RefParam, ...], truncated: bool,
                   ours: inspect.Signature) -> list[str]:
    """The differences between the reference's parameters and ours, as
    messages (empty: compatible)."""
    if ref and _is_var_only(ref):
        # (*args, **kwargs) promises nothing about the parameters
        return []

    P = inspect.Parameter  # noqa: N806
    our_params = list(ours.parameters.values())
    problems: list[str] = []

    our_by_name = {p.name: p for p in our_params}
    ref_positional = [p for p in ref if p.kind in (
        P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    our_positional = [p for p in our_params if p.kind in (
        P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]

    # positional parameters: same order and names (positional-only ones may
    # be named anything and may be accepted by keyword as well)
    for i, rp in enumerate(ref_positional):
        if i >= len(our_positional):
            problems.append(f"positional parameter {i} {rp.name!r} missing")
            continue
        op = our_positional[i]
        if rp.kind == P.POSITIONAL_OR_KEYWORD:
            if op.name != rp.name:
                problems.append(
                    f"positional parameter {i} is {op.name!r}, "
                    f"reference: {rp.name!r}")
            elif op.kind != P.POSITIONAL_OR_KEYWORD:
                problems.append(f"{rp.name!r} is positional-only")
        if rp.has_default and op.default is P.empty:
            problems.append(f"{rp.name!r} has no default")
    ref_has_varargs = any(p.kind == P.VAR_POSITIONAL for p in ref)
    if not truncated:
        for op in our_positional[len(ref_positional):]:
            if op.default is P.empty:
                problems.append(f"extra required positional parameter "
                                f"{op.name!r}")
            elif ref_has_varargs:
                # the reference's *args would be bound to it
                problems.append(f"extra positional parameter {op.name!r} "
                                "where the reference has *args")

    # keyword-only parameters: present (in any order), with defaults where
    # the reference has one
    for rp in ref:
        if rp.kind != P.KEYWORD_ONLY:
            continue
        op = our_by_name.get(rp.name)
        if op is None:
            if not any(p.kind == P.VAR_KEYWORD for p in our_params):
                problems.append(f"keyword-only parameter {rp.name!r} missing")
            continue
        if op.kind not in (P.KEYWORD_ONLY, P.POSITIONAL_OR_KEYWORD):
            problems.append(f"{rp.name!r} is not accepted by keyword")
        if rp.has_default and op.default is P.empty:
            problems.append(f"{rp.name!r} has no default")

    ref_names = {p.name for p in ref}
    if not truncated:
        for op in our_params:
            if op.kind == P.KEYWORD_ONLY and op.name not in ref_names \
                    and op.default is P.empty:
                problems.append(f"extra required keyword-only parameter "
                                f"{op.name!r}")

    for kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD):
        if any(p.kind == kind for p in ref) \
                and not any(p.kind == kind for p in our_params):
            problems.append(
                "no " + ("*args" if kind == P.VAR_POSITIONAL else "**kwargs"))
    return problems


#: bases of the reference that clients test for with isinstance/issubclass
_KNOWN_BASES: dict[str, type] = {
    "Taggable": pytools.tag.Taggable,
    "Tag": pytools.tag.Tag,
    "UniqueTag": pytools.tag.UniqueTag,
    "Mapping": collections.abc.Mapping,
    "Enum": enum.Enum,
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "AssertionError": AssertionError,
    "Exception": Exception,
}


def _check_kind(ref: RefName, obj: Any) -> list[str]:
    problems: list[str] = []
    if ref.kind == "module":
        if not inspect.ismodule(obj):
            problems.append(f"not a module: {obj!r}")
    elif ref.kind == "class":
        if not inspect.isclass(obj):
            problems.append(f"not a class: {obj!r}")
    elif ref.kind == "function":
        if not callable(obj) or (inspect.isclass(obj) and ref.params):
            problems.append(f"not a function: {obj!r}")
    elif ref.kind == "TypeVar":
        if not isinstance(obj, typing.TypeVar):
            problems.append(f"not a TypeVar: {obj!r}")
    return problems


def _check_class(ref: RefName, cls: type) -> list[str]:
    problems: list[str] = []
    for base in ref.bases:
        base = base.split("[")[0]
        known = _KNOWN_BASES.get(base)
        if known is not None and not issubclass(cls, known):
            problems.append(f"not a subclass of {known.__qualname__}")
    if ref.generic:
        params = getattr(cls, "__parameters__", ())
        if not params:
            problems.append("not generic (not subscriptable with type "
                            "parameters)")
        else:
            try:
                cls[tuple(Any for _ in params)]  # type: ignore[index]
            except TypeError as exc:
                problems.append(f"not subscriptable: {exc}")
    return problems


def check_name(ref: RefName) -> list[str]:
    """The problems of the name *ref* in our pytato (empty: compatible)."""
    try:
        obj = _import_name(ref.module, ref.name)
    except ImportError as exc:
        return [f"does not import: {exc}"]
    except AttributeError as exc:
        return [f"does not import: {exc}"]

    problems = _check_kind(ref, obj)
    if problems:
        return problems

    if ref.kind == "class":
        problems += _check_class(ref, obj)
        if issubclass(obj, enum.Enum):
            # the reference's signature is the one of Enum's constructor
            return problems

    if ref.params is not None:
        sig = _our_signature(obj)
        if sig is None:
            mod = getattr(obj, "__module__", "") or ""
            if mod.split(".")[0] == "pytato":
                problems.append("has no inspectable signature")
            # else: a third-party object (numpy.dtype, ...), as upstream
        else:
            problems += compare_params(ref.params, ref.truncated, sig)
    return problems


def check_members(ref: RefName) -> list[str]:
    try:
        obj = _import_name(ref.module, ref.name)
    except (ImportError, AttributeError) as exc:
        return [f"does not import: {exc}"]
    return [f"no member {m!r}" for m in ref.members
            if not hasattr(obj, m)
            and f"{ref.full_name}.{m}" not in DECIDED_EXCEPTIONS]

# }}}


# {{{ tests

def _name_params() -> list[Any]:
    return [pytest.param(ref, id=ref.full_name) for ref in _REF_NAMES]


def _member_params() -> list[Any]:
    return [pytest.param(ref, id=ref.full_name) for ref in _REF_NAMES
            if ref.members]


@_skip_if_absent
def test_reference_is_parsed() -> None:
    modules = {ref.module for ref in _REF_NAMES}
    assert "pytato" in modules and "pytato.transform" in modules
    assert len(_REF_NAMES) > 400
    assert len(_CLIENT_NAMES) > 50


@_skip_if_absent
@pytest.mark.parametrize("ref", _name_params())
def test_reference_name(ref: RefName) -> None:
    reason = _exception_reason(ref.full_name)
    if reason is not None:
        pytest.skip(f"decided exception: {reason}")
    problems = check_name(ref)
    assert not problems, f"{ref.full_name}: " + "; ".join(problems)


@_skip_if_absent
@pytest.mark.parametrize("ref", _member_params())
def test_reference_members(ref: RefName) -> None:
    reason = _exception_reason(ref.full_name)
    if reason is not None:
        pytest.skip(f"decided exception: {reason}")
    problems = check_members(ref)
    assert not problems, f"{ref.full_name}: " + "; ".join(problems)


@_skip_if_absent
@pytest.mark.parametrize("dotted", _CLIENT_NAMES)
def test_client_name_imports(dotted: str) -> None:
    _resolve_dotted(dotted)


def test_decided_exceptions_are_in_the_reference() -> None:
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} is absent")
    known = {ref.full_name for ref in _REF_NAMES} | {
        f"{ref.full_name}.{m}" for ref in _REF_NAMES for m in ref.members}
    stale = sorted(set(DECIDED_EXCEPTIONS) - known)
    assert not stale, f"exceptions naming nothing of the reference: {stale}"
    assert all(reason.strip() for reason in DECIDED_EXCEPTIONS.values())


def test_decided_exceptions_are_documented() -> None:
    page = (Path(__file__).resolve().parent.parent / "doc" / "upstream.rst")
    text = page.read_text()
    missing = [name for name in DECIDED_EXCEPTIONS if name not in text]
    assert not missing, f"exceptions not on doc/upstream.rst: {missing}"


# {{{ the parser itself

def test_parse_signature() -> None:
    P = inspect.Parameter  # noqa: N806
    params, truncated, rest = _parse_params(
        "(a: 'tuple[int, ...]', b: 'X' = frozenset(), /, c=1, *d, "
        "e: 'int' = <class 'float'>, **f) -> 'None'; bases: Tag, UniqueTag")
    assert not truncated
    assert [(p.name, p.kind, p.has_default) for p in params] == [
        ("a", P.POSITIONAL_ONLY, False),
        ("b", P.POSITIONAL_ONLY, True),
        ("c", P.POSITIONAL_OR_KEYWORD, True),
        ("d", P.VAR_POSITIONAL, False),
        ("e", P.KEYWORD_ONLY, True),
        ("f", P.VAR_KEYWORD, False)]
    assert _parse_bases(rest) == ("Tag", "UniqueTag")

    params, truncated, _ = _parse_params("(x: 'A', *, y: 'B' = frozenset({<cla")
    assert truncated
    assert [p.name for p in params] == ["x"]

    params, _, _ = _parse_params("(...); bases: ValueError")
    assert params is None


def test_compare_params() -> None:
    ref, _, _ = _parse_params("(a, b=1, *, c=2)")

    def f_ok(a, b=1, *, c=2, extra=3):  # type: ignore[no-untyped-def]
        pass

    def f_order(b, a=1, *, c=2):  # type: ignore[no-untyped-def]
        pass

    def f_nodefault(a, b, *, c=2):  # type: ignore[no-untyped-def]
        pass

    def f_extra_pos(a, b=1, d=4, *, c=2):  # type: ignore[no-untyped-def]
        pass

    def f_extra_pos_required(a, d, b=1, *, c=2):  # type: ignore[no-untyped-def]
        pass

    def f_missing_kw(a, b=1):  # type: ignore[no-untyped-def]
        pass

    assert compare_params(ref, False, inspect.signature(f_ok)) == []
    assert compare_params(ref, False, inspect.signature(f_order))
    assert compare_params(ref, False, inspect.signature(f_nodefault))
    # a superset: calls valid against the reference bind the same way
    assert compare_params(ref, False, inspect.signature(f_extra_pos)) == []
    assert compare_params(ref, False, inspect.signature(f_extra_pos_required))
    assert compare_params(ref, False, inspect.signature(f_missing_kw))

# }}}

# }}}

# vim: foldmethod=marker
