"""Names given on the command line, checked before a run: an unknown one is named with the closest valid one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean `x`?)` for the closest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def check_names(specs: Sequence[str] | None, scenarios: Sequence[str] | None, variants: Sequence[str] | None,
                reference: str) -> None:
    """Raise ValueError for a misspelt catalogue spec, scenario or variant, with a suggestion and the valid names.

    Spec files and modules (`file.py:NAME`, `package.module:NAME`) are left to the loader.
    """
    from compat.catalogue import ALL_SPECS, FORMS_GROUP
    from compat.contexts import ALL_CONTEXTS as CONTEXTS
    from compat.mechanisms import MECHANISMS
    from compat.scenarios import SCENARIOS
    from compat.variants import ALL_VARIANTS as VARIANTS

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
