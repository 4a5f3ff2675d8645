"""The rule registry: stable ids, complete help text, SARIF-compatible levels."""

from __future__ import annotations

from compat.audit import RULES, Severity


def test_rule_ids_are_stable_and_ordered():
    assert list(RULES) == [f"GC00{i}" for i in range(9)]


def test_every_rule_is_documented_and_has_a_sarif_level():
    for rule_id, rule in RULES.items():
        assert rule.id == rule_id
        assert rule.name and "-" in rule.name and rule.name == rule.name.lower()
        assert rule.short and rule.description and rule.help
        assert rule.severity in set(Severity)


def test_registry_is_read_only():
    try:
        RULES["GC999"] = RULES["GC000"]  # type: ignore[index]
    except TypeError:
        return
    raise AssertionError("RULES should be immutable")
