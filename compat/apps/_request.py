"""What compat-check runs, as picklable data: every worker process loads the same specs and scenarios from it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compat.apps._loss import LOSS_SCENARIO, LossError, parse_loss

if TYPE_CHECKING:
    from compat.scenarios import Scenario
    from compat.spec import GradientSpec


@dataclasses.dataclass(frozen=True)
class CheckRequest:
    """`--specs`, `--scenarios` and `--loss` as given; calling it loads the specs and builds the scenarios."""

    specs: tuple[str, ...] | None = None
    scenarios: tuple[str, ...] | None = None
    loss: str | None = None

    def __call__(self) -> tuple[list[GradientSpec], list[str | Scenario] | None]:
        """(specs, scenarios); SpecLoadError or LossError (both ValueError) naming what cannot be loaded."""
        specs, scenarios, _ = self.load()
        return specs, scenarios

    def load(self) -> tuple[list[GradientSpec], list[str | Scenario] | None, Callable[..., Any] | None]:
        """(specs, scenarios, the parsed --loss or None)."""
        from compat.catalogue import CATALOGUE
        from compat.loading import load_specs
        from compat.scenarios import loss_scenario

        specs = load_specs(self.specs or list(CATALOGUE))
        scenarios: list[str | Scenario] | None = list(self.scenarios) if self.scenarios else None
        if not self.loss:
            if scenarios and LOSS_SCENARIO in scenarios:
                raise LossError(f"the scenario `{LOSS_SCENARIO}` is your --loss: give one, e.g. "
                                "--loss='tf.reduce_sum(y * 3.0)'")
            return specs, scenarios, None
        loss = parse_loss(self.loss)
        custom = loss_scenario(loss, LOSS_SCENARIO, f"your loss: {self.loss}")
        scenarios = scenarios or [LOSS_SCENARIO]
        scenarios = [custom if name == LOSS_SCENARIO else name for name in scenarios]
        if custom not in scenarios:
            scenarios.append(custom)
        return specs, scenarios, loss
