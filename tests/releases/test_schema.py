"""compat.releases.schema: the standard-library checker agrees with jsonschema on the shipped report schema."""

import copy
import json

import jsonschema
import pytest

from compat.releases.merge import check_report_schema
from compat.releases.schema import MAX_DEPTH, SchemaMismatch, SchemaUnsupported, check_keywords, too_deep, validate

REPLACEMENTS = (None, {}, [], 1.5, 2, -1, "x", True, [None], {"kind": "dense"})


def _paths(value, path=()):
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


def _variants(report, every):
    """The report with one value replaced (or one key deleted) at every `every`-th place in it."""
    for path in list(_paths(report))[1::every]:
        for replacement in (*REPLACEMENTS, KeyError):
            other = copy.deepcopy(report)
            parent = other
            for key in path[:-1]:
                parent = parent[key]
            if replacement is KeyError:
                if not isinstance(parent, dict):
                    continue
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(replacement)
            yield path, other


def _ours(document, schema):
    try:
        validate(document, schema)
    except SchemaMismatch:
        return False
    return True


def test_the_shipped_schema_uses_only_keywords_the_checker_implements():
    check_keywords(check_report_schema())  # raises if the schema outgrew compat.releases.schema
    with pytest.raises(SchemaUnsupported, match=r"schema #/properties/x uses \['maxItems'\]"):
        check_keywords({"properties": {"x": {"type": "array", "maxItems": 3}}})


def _one_cell_of_each_kind(report):
    """The report with one cell per (status, has differences, upstream null, input_grads null): every shape a
    cell takes, small enough to mutate everywhere."""
    kept = {}
    for cell in report["cells"]:
        kind = (cell["status"], bool(cell["differences"]), cell["upstream"] is None, cell["input_grads"] is None)
        kept.setdefault(kind, cell)
    return {**report, "cells": list(kept.values())}


def test_it_agrees_with_jsonschema_on_a_real_report_and_its_mutations(report):
    schema = check_report_schema()
    reference = jsonschema.Draft202012Validator(schema)
    small = _one_cell_of_each_kind(report)
    assert len(small["cells"]) >= 4 and reference.is_valid(small) and _ours(small, schema)
    checked = invalid = 0
    disagreements = []
    for path, document in _variants(small, every=5):
        expected = reference.is_valid(document)
        checked, invalid = checked + 1, invalid + (not expected)
        if _ours(document, schema) != expected:
            disagreements.append((path, expected))
    assert checked > 300 and invalid > 150 and disagreements == []


def test_errors_name_the_json_path_and_the_closest_form():
    schema = check_report_schema()
    with pytest.raises(SchemaMismatch) as summary:
        validate({"a": {"summary": True}}, {"$defs": schema["$defs"], "additionalProperties":
                                            {"$ref": "#/$defs/array_or_summary"}})
    assert str(summary.value) == '$.a: "dtype" is missing'
    with pytest.raises(SchemaMismatch) as either:
        validate({"u": {}}, {"properties": {"u": {"oneOf": [{"type": "null"}, {"type": "array"}]}}})
    assert str(either.value) == "$.u: expected null or array, got object {}"
    with pytest.raises(SchemaMismatch) as flag:
        validate({"exit_code": True}, {"properties": {"exit_code": {"enum": [0, 1]}}})
    assert str(flag.value) == "$.exit_code: expected one of 0, 1, got true"  # true is no 1 in JSON


def test_nesting_is_measured_without_recursion_and_refused_past_the_limit():
    value = 0.0
    for _ in range(200_000):
        value = [value]
    assert too_deep(value, MAX_DEPTH) == "$" + "[0]" * MAX_DEPTH
    assert too_deep(json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH), MAX_DEPTH) is None
    with pytest.raises(SchemaMismatch, match=f"nested more than {MAX_DEPTH} arrays or objects deep"):
        validate({"x": value}, {"type": "object"})
