"""The guide's part on the references that are the forward itself, read from the guide run."""

from __future__ import annotations

from compat.checker import CheckReport
from compat.reports import forward
from tools.guide.tables import markdown_table

_SPECS = ("ste", "multi_output_int")


def _by_scenario(report: CheckReport, spec: str) -> dict[str, forward.Scene]:
    return {scene.scenario: scene for scene in forward.scenes(report) if scene.spec == spec}


def _status(scene: forward.Scene | None, reference: str) -> str:
    checked = next((c for c in scene.cell.forward if c.reference == reference), None) if scene else None
    return forward.WORDS[checked.status] if checked else "skipped"


def forward_table(report: CheckReport) -> str:
    """Per scenario, each guide spec's reference cell against autodiff and finite differences."""
    scenes = {spec: _by_scenario(report, spec) for spec in _SPECS}
    header = ["scenario"] + [f"`{spec}` {name}" for spec in _SPECS for name in ("autodiff", "finite diff.")]
    rows = [[f"`{scenario}`"] + [_status(scenes[spec].get(scenario), reference) for spec in _SPECS
                                 for reference in ("autodiff", "finite_difference")]
            for scenario in report.scenarios if any(scenario in scenes[spec] for spec in _SPECS)]
    return markdown_table(header, rows)


def _scenarios(scenes: dict[str, forward.Scene], reference: str, status: str) -> list[str]:
    return [name for name, scene in scenes.items() if _status(scene, reference) == forward.WORDS[status]]


def _ticks(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def forward_facts(report: CheckReport) -> str:
    """What the straight-through estimator changes (everything) and what a gradient written as the forward's
    derivative changes (nothing), and the ignored override's gradient, from the run."""
    ste, exact = _by_scenario(report, "ste"), _by_scenario(report, "multi_output_int")
    flowing = [name for name, scene in ste.items() if scene.cell.result.calls]
    differs = _scenarios(ste, "autodiff", "differs")
    flat = [name for name, scene in ste.items() if any(c.reason == "piecewise constant" for c in scene.cell.forward)]
    exact_same = {ref: _scenarios(exact, ref, "same") for ref in ("autodiff", "finite_difference")}
    ignored = [scene.scenario for scene in ste.values() if "override_map@eager_tape" in
               scene.others.get("autodiff", {}).get("same", [])]
    return (f"For `ste` (sign forward, straight-through gradient) TensorFlow's own gradient of the forward is zeros: "
            f"against `autodiff` the custom gradient differs in {len(differs)} of the {len(flowing)} scenarios where "
            f"it is called ({_ticks(differs)}), and `finite_difference` answers `not_differentiable` in "
            f"{len(flat)} ({_ticks(flat[:3])}{', ...' if len(flat) > 3 else ''}): the forward is piecewise constant, "
            f"so there is no derivative to check a straight-through gradient against. `multi_output_int`'s gradient "
            f"is written as its forward's derivative: `same` as `autodiff` in {len(exact_same['autodiff'])} of "
            f"{len(exact)} scenarios and as `finite_difference` in {len(exact_same['finite_difference'])} (the rest "
            f"`n/a`: second order). An `override_map` that the eager tape ignores gets TensorFlow's own gradient, "
            f"`same` as `autodiff` where the reference variant differs ({_ticks(ignored[:3])}"
            f"{', ...' if len(ignored) > 3 else ''}).")
