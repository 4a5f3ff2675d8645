"""Names given on the command line, checked before a run: an unknown one is named with the closest valid one."""

from __future__ import annotations

from collections.abc import Sequence

from compat.registry import ALL_CONTEXT_NAMES as CONTEXTS
from compat.registry import ALL_VARIANTS as VARIANTS
from compat.registry import MECHANISM_NAMES as MECHANISMS
from compat.registry import SCENARIO_NAMES as SCENARIOS
from compat.registry import did_you_mean


def check_names(specs: Sequence[str] | None, scenarios: Sequence[str] | None, variants: Sequence[str] | None,
                reference: str) -> None:
    """Raise ValueError for a misspelt catalogue spec, scenario or variant, with a suggestion and the valid names.

    Spec files and modules (`file.py:NAME`, `package.module:NAME`) are left to the loader. Needs no TensorFlow.
    """
    from compat.catalogue import ALL_SPECS, FORMS_GROUP

    for spec in specs or ():
        name = spec.strip()
        known = [*ALL_SPECS, FORMS_GROUP]
        if name not in known and ":" not in name and "/" not in name and not name.endswith(".py"):
            hint = did_you_mean(name, known)
            if hint:
                raise ValueError(f"--specs {name!r}: not a catalogue spec{hint}; catalogue specs: "
                                 f"{', '.join(known)}")
    for scenario in scenarios or ():
        if scenario not in SCENARIOS and scenario != "custom":
            raise ValueError(f"unknown scenario {scenario!r}{did_you_mean(scenario, SCENARIOS)}; choose from "
                             f"{', '.join(SCENARIOS)} (and `custom` with --loss)")
    for pattern in [*(variants or ()), reference]:
        if pattern in VARIANTS:
            continue
        mechanism, at, context = pattern.partition("@")
        if not at:
            raise ValueError(f"unknown variant {pattern!r}{did_you_mean(pattern, VARIANTS)}: a variant is "
                             "MECHANISM@CONTEXT, e.g. custom_gradient@eager_tape or custom_gradient@*")
        wrong = [(part, names) for part, names in ((mechanism, MECHANISMS), (context, CONTEXTS))
                 if part != "*" and part not in names]
        for part, names in wrong:
            raise ValueError(f"unknown variant {pattern!r}: {part!r}{did_you_mean(part, names)} is none of "
                             f"{', '.join(names)}")
