"""Entry points to verify: read `GRADCOMPAT_ENTRIES` statically, parse them from flags, make example inputs."""

from __future__ import annotations

import ast
import dataclasses
import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from compat.errors import Error


@dataclasses.dataclass(frozen=True)
class Constant:
    """An argument passed as it is, not a tensor: `bits` in `quantize(x, bits)` (written `4` in the entries)."""

    value: Any


InputSpec = tuple[str, list[int]] | Constant
Entries = dict[str, list[InputSpec]]
"""Entry function name -> one (dtype name, shape) per tensor argument, or a `Constant` (a Python scalar or string
written as is) per other argument, e.g. {"sign_ste": [("float32", [3])], "quantize": [("float32", [3]), 4]}."""
_CONSTANT_TYPES = (int, float, bool, str, type(None))

ENTRIES_CONSTANT = "GRADCOMPAT_ENTRIES"
_SEED = 20261210
_ENTRY_FLAG = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$")
_INPUT_FLAG = re.compile(r"^([a-z0-9]+)\[((?:[0-9]+(?:,[0-9]+)*)?)\]$")
ENTRIES_EXAMPLE = 'GRADCOMPAT_ENTRIES = {"my_op": [("float32", [3]), ("float32", [2, 3])]}'
MAX_INPUT_ELEMENTS = 1_000_000
"""Verify runs small examples: an input larger than this is a usage error, not an out-of-memory crash."""
SHAPE_CANDIDATES: tuple[tuple[int, ...], ...] = ((3,), (3, 3), (2, 3, 3), (2, 3, 3, 3))
"""The shapes tried, in order, for an entry declared or inferred without shapes (one per rank, 1-4)."""


class EntriesError(Error, ValueError):
    """The entry points to verify are missing or malformed; the message says how to declare them.

    `argument` is `entries` when the entries text (`parse_entries`) is at fault: the message begins `entries: `.
    """

    def __init__(self, message: str, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument

    def __reduce__(self) -> tuple[type[EntriesError], tuple[str, str | None]]:
        return EntriesError, (str(self), self.argument)


def read_entries(source: str, filename: str = "<source>") -> Entries:
    """The module-level `GRADCOMPAT_ENTRIES` literal of `source`, read with `ast` (the code never runs).

    Raises:
      EntriesError: the source does not parse, has no such constant, or it is not a valid literal.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise EntriesError(f"{filename}:{exc.lineno}: cannot parse the module to read {ENTRIES_CONSTANT} "
                           f"({exc.msg}); fix the syntax or pass the entries explicitly") from None
    assignments = [node for node in tree.body if _assigned_value(node) is not None]
    for node in assignments[-1:]:  # the last assignment is the one Python keeps
        value = _assigned_value(node)
        assert value is not None
        try:
            literal = ast.literal_eval(value)
        except ValueError:
            raise EntriesError(f"{filename}:{node.lineno}: {ENTRIES_CONSTANT} must be a plain literal, like "
                               f"{ENTRIES_EXAMPLE}") from None
        return validate_entries(literal, f"{filename}:{node.lineno}")
    raise EntriesError(f"{filename}: no module-level {ENTRIES_CONSTANT}; declare the entry points to verify, "
                       f"like {ENTRIES_EXAMPLE}, or pass them explicitly")


def declares_entries(source: str, filename: str = "<source>") -> bool:
    """Whether `source` assigns `GRADCOMPAT_ENTRIES` at module level (a mention in a comment or string does not)."""
    if ENTRIES_CONSTANT not in source:
        return False
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError:
        return False
    return any(_assigned_value(node) is not None for node in tree.body)


def _assigned_value(node: ast.stmt) -> ast.expr | None:
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ENTRIES_CONSTANT
                                            for t in node.targets):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == ENTRIES_CONSTANT:
        return node.value
    return None


def validate_entries(value: object, where: str = "entries") -> Entries:
    """`value` as Entries (lists of (dtype, shape) pairs), or EntriesError naming what is wrong."""
    if not isinstance(value, dict) or not value:
        raise EntriesError(f"{where}: expected a non-empty dict of function name -> inputs, like {ENTRIES_EXAMPLE}")
    entries: Entries = {}
    for name, inputs in value.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise EntriesError(f"{where}: entry name {name!r} is not a function name")
        if not isinstance(inputs, (list, tuple)) or not inputs:
            raise EntriesError(f"{where}: entry `{name}`: expected a non-empty list of (dtype, shape) pairs, one per "
                               f"input, got {inputs!r}")
        entries[name] = [_input(name, index, item, where) for index, item in enumerate(inputs)]
        if not any(isinstance(item, tuple) for item in entries[name]):
            raise EntriesError(f"{where}: entry `{name}` has no tensor input (dtype, shape): nothing to differentiate")
    return entries


def _input(name: str, index: int, item: object, where: str) -> InputSpec:
    problem = (f"{where}: entry `{name}` input {index}: expected (dtype, shape) like (\"float32\", [2, 3]) for a "
               f"tensor, or a number, bool, string or None passed as it is, got {item!r}")
    if isinstance(item, Constant):
        item = item.value
    if isinstance(item, _CONSTANT_TYPES):
        return Constant(item)
    if not isinstance(item, (list, tuple)) or len(item) != 2:
        raise EntriesError(problem)
    dtype, shape = item
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise EntriesError(problem)
    numpy_dtype = _numpy_dtype(dtype) if isinstance(dtype, str) else None
    if numpy_dtype is None:
        raise EntriesError(f"{problem}; the dtype must be a numpy/TensorFlow name: float32, float64, float16, "
                           f"bfloat16, int32, int64 or bool")
    elements = int(np.prod(shape, dtype=object)) if shape else 1
    if elements > MAX_INPUT_ELEMENTS:
        raise EntriesError(f"{where}: entry `{name}` input {index}: {dtype}{list(shape)} has {elements:,} elements "
                           f"({elements * numpy_dtype.itemsize / 2**20:,.0f} MiB); verify runs small examples: give "
                           f"a shape of at most {MAX_INPUT_ELEMENTS:,} elements, e.g. {dtype}[2, 3]")
    return str(dtype), list(shape)


def parse_entries(text: str) -> Entries:
    """Entries from text (a command line's flag): `name:dtype[shape],dtype[shape];name2:...`.

    Example: `sign_ste:float32[3];product:float32[2,3],float32[2,3]` (an empty shape `float32[]` is a scalar).
    A name given twice, an entry without inputs and inputs not separated by commas are errors: an EntriesError
    whose message begins `entries: ` (its `argument`).
    """
    try:
        return _parse_entries(text)
    except EntriesError as exc:
        message = str(exc).removeprefix("entries: ")
        raise EntriesError(f"entries: {message}", "entries") from None


def _parse_entries(text: str) -> Entries:
    entries: Entries = {}
    for part in filter(str.strip, text.split(";")):
        match = _ENTRY_FLAG.match(part)
        if not match:
            raise EntriesError(f"entry {part.strip()!r}: expected name:dtype[shape],..., like "
                               f"sign_ste:float32[3] or product:float32[2,3],float32[2,3]")
        name, inputs_text = match.group(1), match.group(2)
        if name in entries:
            raise EntriesError(f"entry `{name}` is given twice; give each function once")
        entries[name] = _parse_inputs(name, inputs_text)
    return validate_entries(entries, "entries")


def _parse_inputs(name: str, text: str) -> list[InputSpec]:
    """`float32[3],int32[2, 3],4` as inputs: each dtype[shape] (a tensor) or a Python literal passed as it is
    (a number, True/False/None, a quoted string), separated by commas."""
    if not text.strip():
        raise EntriesError(f"entry `{name}` has no inputs: give them as dtype[shape],..., e.g. {name}:float32[3]")
    inputs: list[InputSpec] = []
    for spec in _top_level_split(text):
        found = _INPUT_FLAG.match(spec.replace(" ", ""))
        if found:
            inputs.append((found.group(1), [int(d) for d in found.group(2).split(",") if d]))
            continue
        try:
            value = ast.literal_eval(spec.strip())
        except (ValueError, SyntaxError):
            value = ...
        if not isinstance(value, _CONSTANT_TYPES):
            raise EntriesError(f"entry `{name}`: input {spec.strip()!r} is not dtype[shape] nor a constant (inputs "
                               f"are dtype[shape] or a number/True/False/None/'text' passed as it is, separated by "
                               f"commas, e.g. float32[3] or float32[2,3],float32[2,3] or float32[3],4)")
        inputs.append(Constant(value))
    return inputs


def _top_level_split(text: str) -> list[str]:
    """`text` split at commas outside brackets and quotes."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    return [*parts, "".join(current)]


def tensor_specs(inputs: Sequence[InputSpec]) -> list[tuple[str, list[int]]]:
    """The (dtype, shape) of each tensor input, in order (constants left out)."""
    return [item for item in inputs if isinstance(item, tuple)]


def constants_of(inputs: Sequence[InputSpec]) -> tuple[tuple[int, Any], ...]:
    """(position, value) of each constant argument."""
    return tuple((index, item.value) for index, item in enumerate(inputs) if isinstance(item, Constant))


def _numpy_dtype(name: str) -> np.dtype | None:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None
    return dtype if dtype.kind in "fiub" else None


def example_inputs(entry: str, inputs: Sequence[InputSpec]) -> list[np.ndarray]:
    """Deterministic values for `entry`'s tensor inputs (constants left out): floats k + 0.3 (k in -3..2), away
    from the discontinuities of sign, round, floor and relu; integers in 0..2 (valid as small indices); seeded
    by the entry name."""
    values = []
    for index, (dtype_name, shape) in enumerate(tensor_specs(inputs)):
        dtype = _numpy_dtype(dtype_name)
        assert dtype is not None, "validate_entries checks every dtype"
        rng = np.random.default_rng([_SEED, zlib.crc32(entry.encode()), index])
        if dtype.kind == "b":
            value = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.kind in "iu":
            value = rng.integers(0, 3, size=shape).astype(dtype)
        else:
            value = (rng.integers(-3, 3, size=shape) + 0.3).astype(dtype)
        values.append(np.asarray(value))
    return values
