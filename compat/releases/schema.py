"""Check a JSON document against a JSON Schema (the keywords gradcompat's schemas use), standard library only.

nox merges the releases' reports with its own interpreter, where `jsonschema` need not exist, so this validates
`compat/reports/check_report.schema.json` itself: draft 2020-12's `type`, `const`, `enum`, `required`,
`properties`, `additionalProperties`, `items`, `oneOf`, `minimum`, `pattern` and local `$ref`s. A schema using
any other keyword is refused (SchemaUnsupported), so the schema cannot outgrow this checker unnoticed. The first
problem found is reported with its JSON path, e.g. `$.cells[3].differences[0]: "kind" is missing`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

SUPPORTED = frozenset({"$schema", "$id", "$defs", "$ref", "title", "description", "type", "const", "enum",
                       "required", "properties", "additionalProperties", "items", "oneOf", "minimum", "pattern"})
"""The keywords this checker implements (the others are annotations it may ignore: none so far)."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted: a report's deepest value, a rank-r array in a cell's
upstream, is r + 5 levels down; a deeper document is refused before anything recurses into it."""


class SchemaUnsupported(ValueError):
    """The schema uses a keyword this checker does not implement."""


class SchemaMismatch(ValueError):
    """The document does not match the schema; `path` is where (a JSON path) and `problem` what is wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = path, problem


def check_keywords(schema: Any) -> None:
    """Raise SchemaUnsupported if any (sub)schema uses a keyword outside SUPPORTED."""
    for where, node in _subschemas(schema, "#"):
        unknown = sorted(set(node) - SUPPORTED)
        if unknown:
            raise SchemaUnsupported(f"schema {where} uses {unknown}, which compat.releases.schema does not check")


def validate(document: Any, schema: dict[str, Any]) -> None:
    """Raise SchemaMismatch at the first place `document` breaks `schema` (or nests deeper than MAX_DEPTH)."""
    check_keywords(schema)
    deep = too_deep(document, MAX_DEPTH)
    if deep is not None:
        raise SchemaMismatch(deep, f"nested more than {MAX_DEPTH} arrays or objects deep; a gradcompat report "
                                   "never is")
    problem = _Checker(schema).problem(document, schema, None)
    if problem is not None:
        raise SchemaMismatch(_format(problem[0]), str(problem[1]))


def too_deep(document: Any, limit: int) -> str | None:
    """The JSON path of the first array or object nested deeper than `limit`, or None; iterative, so any depth
    json.loads returns is measured without recursion."""
    stack: list[tuple[Any, _Path, int]] = [(document, None, 1)]
    while stack:
        value, path, depth = stack.pop()
        if depth > limit:
            return _format(path)
        if isinstance(value, dict):
            stack.extend((child, (path, key), depth + 1) for key, child in value.items()
                         if isinstance(child, (list, dict)))
        elif isinstance(value, list):
            stack.extend((child, (path, index), depth + 1) for index, child in enumerate(value)
                         if isinstance(child, (list, dict)))
    return None


@dataclasses.dataclass(frozen=True)
class _Expected:
    """A value that is not what the schema wants, formatted only if it is reported: most are alternatives of a
    `oneOf` that another alternative matches."""

    wanted: str
    value: Any

    def __str__(self) -> str:
        return f"expected {self.wanted}, got {_shown(self.value)}"


_Path = tuple[Any, "int | str"] | None
"""A place in the document as (parent's place, key), None for the document itself: formatted (`$.cells[3]`)
only when a problem there is reported."""
_Problem = tuple[_Path, "str | _Expected"]
"""Where and what is wrong."""


class _Checker:
    """One validation: `problem` returns the first (path, problem) found, or None."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self._refs: dict[str, dict[str, Any]] = {}
        # A scalar's problem depends on its value alone, and reports repeat values (1.0, "float32") and rows of
        # them ([0.5, 0.5, 0.5]) thousands of times: remembered per schema and value (with the types, as 1 is
        # not true), as the problem and where it is below the value (None: the value itself, i: its item i).
        self._remembered: dict[tuple[Any, ...], tuple[int | str | None, str | _Expected] | None] = {}

    def problem(self, value: Any, schema: dict[str, Any], path: _Path) -> _Problem | None:
        if isinstance(value, dict):
            return self._problem(value, schema, path)
        if isinstance(value, list):
            if not all(type(item) in _SCALARS for item in value):
                return self._problem(value, schema, path)
            key: tuple[Any, ...] = (id(schema), tuple(map(type, value)), tuple(value))
        else:
            key = (id(schema), type(value), value)
        if key not in self._remembered:
            found = self._problem(value, schema, path)
            if found is None:
                self._remembered[key] = None
            else:
                where, problem = found
                self._remembered[key] = (None if where is path or where is None else where[1]), problem
        remembered = self._remembered[key]
        if remembered is None:
            return None
        below, found_problem = remembered
        return (path if below is None else (path, below)), found_problem

    def _problem(self, value: Any, schema: dict[str, Any], path: _Path) -> _Problem | None:
        if "$ref" in schema:
            found = self.problem(value, self._resolve(schema["$ref"]), path)
            if found is not None:
                return found
        if "oneOf" in schema:
            found = self._one_of(value, schema["oneOf"], path)
            if found is not None:
                return found
        for check in (_check_type, _check_value, _check_minimum, _check_pattern):
            message = check(value, schema)
            if message is not None:
                return path, message
        if isinstance(value, dict):
            return self._object(value, schema, path)
        if isinstance(value, list) and "items" in schema:
            for index, item in enumerate(value):
                found = self.problem(item, schema["items"], (path, index))
                if found is not None:
                    return found
        return None

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: _Path) -> _Problem | None:
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            return path, f"{json.dumps(missing[0])} is missing"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                found = self.problem(item, properties[key], (path, key))
            elif extra is False:
                found = path, f"unexpected key {json.dumps(key)}; allowed: {', '.join(sorted(properties))}"
            elif isinstance(extra, dict):
                found = self.problem(item, extra, (path, key))
            else:
                found = None
            if found is not None:
                return found
        return None

    def _one_of(self, value: Any, options: list[dict[str, Any]], path: _Path) -> _Problem | None:
        problems = [self.problem(value, option, path) for option in options]
        matches = sum(problem is None for problem in problems)
        if matches == 1:
            return None
        if matches > 1:
            return path, f"{_shown(value)} matches {matches} of the forms allowed here, where exactly one must"
        return _closest([problem for problem in problems if problem is not None])

    def _resolve(self, reference: str) -> dict[str, Any]:
        if reference not in self._refs:
            if not reference.startswith("#/"):
                raise SchemaUnsupported(f"$ref {reference!r}: only references inside the schema (#/...) are checked")
            node: Any = self.root
            for part in reference[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            self._refs[reference] = node
        return self._refs[reference]


def _closest(problems: list[_Problem]) -> _Problem:
    """What is wrong with a value no `oneOf` form matches: the problem of the form that got deepest into it,
    one that is not a plain mismatch first; mismatches of every form at the value itself are merged
    ("expected null or array, got object ...")."""
    depth = max(_depth(path) for path, _ in problems)
    deepest = [problem for problem in problems if _depth(problem[0]) == depth]
    specific = [problem for problem in deepest if not isinstance(problem[1], _Expected)]
    if specific:
        return specific[0]
    path, first = deepest[0]
    assert isinstance(first, _Expected)
    wanted = " or ".join(problem.wanted for _, problem in deepest if isinstance(problem, _Expected))
    return path, _Expected(wanted, first.value)


_TYPES = {"null": lambda v: v is None, "boolean": lambda v: isinstance(v, bool),
          "string": lambda v: isinstance(v, str), "array": lambda v: isinstance(v, list),
          "object": lambda v: isinstance(v, dict),
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
          or (isinstance(v, float) and v.is_integer())}


def _check_type(value: Any, schema: dict[str, Any]) -> _Expected | None:
    if "type" not in schema:
        return None
    allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if any(_TYPES[name](value) for name in allowed):
        return None
    return _Expected(" or ".join(allowed), value)


def _check_value(value: Any, schema: dict[str, Any]) -> _Expected | None:
    if "const" in schema and not _equal(value, schema["const"]):
        return _Expected(json.dumps(schema["const"]), value)
    if "enum" in schema and not any(_equal(value, option) for option in schema["enum"]):
        return _Expected(f"one of {', '.join(json.dumps(option) for option in schema['enum'])}", value)
    return None


def _check_minimum(value: Any, schema: dict[str, Any]) -> _Expected | None:
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        return _Expected(f"at least {schema['minimum']}", value)
    return None


def _check_pattern(value: Any, schema: dict[str, Any]) -> _Expected | None:
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        return _Expected(f"a string matching {schema['pattern']!r}", value)
    return None


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0, arrays and objects compared member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if _TYPES["number"](a) and _TYPES["number"](b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _shown(value: Any) -> str:
    kind = next((name for name in ("null", "boolean", "integer", "number", "string", "array", "object")
                 if _TYPES[name](value)), type(value).__name__)
    text = json.dumps(value, ensure_ascii=False, default=str)
    text = text if len(text) <= 60 else text[:59] + "…"
    return text if kind in ("null", "boolean") else f"{kind} {text}"


def _depth(path: _Path) -> int:
    depth = 0
    while path is not None:
        path, depth = path[0], depth + 1
    return depth


def _format(path: _Path) -> str:
    """`$.cells[3].differences[0]`: keys that are names after dots, others (and indices) in brackets."""
    keys: list[int | str] = []
    while path is not None:
        path, key = path
        keys.append(key)
    text = "$"
    for key in reversed(keys):
        if isinstance(key, str) and _NAME.fullmatch(key):
            text += f".{key}"
        else:
            text += f"[{key if isinstance(key, int) else json.dumps(key)}]"
    return text


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCALARS = frozenset({type(None), bool, int, float, str})


def _subschemas(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside `schema` (itself first), with its location as a JSON pointer."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for keyword in ("properties", "$defs"):
        for name, child in schema.get(keyword, {}).items():
            yield from _subschemas(child, f"{where}/{keyword}/{name}")
    for keyword in ("items", "additionalProperties"):
        yield from _subschemas(schema.get(keyword), f"{where}/{keyword}")
    for index, child in enumerate(schema.get("oneOf", ())):
        yield from _subschemas(child, f"{where}/oneOf/{index}")
