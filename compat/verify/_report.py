"""The verification report: one cell per entry × scenario × context, as JSON or text."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from compat.comparison import Difference
from compat.json_values import difference_dict, difference_from_dict

VerifyStatus = Literal["same", "differs", "error", "unsupported", "skipped"]
VERIFY_STATUSES: tuple[VerifyStatus, ...] = ("same", "differs", "error", "unsupported", "skipped")
_PASSING = frozenset({"same", "skipped", "unsupported"})
UpstreamStatus = Literal["same", "differs", "not_called", "not_observable"]
"""How the upstreams compared, in compat-check's words for a cell: `same`, `differs`, `not_called` (on neither
side), `not_observable` (a side's gradient function cannot be instrumented, or ran on one side only)."""


@dataclasses.dataclass(frozen=True)
class VerifyCell:
    """The rewritten entry in one scenario and context, compared with the original in a v1 Session.

    Attributes:
      scenario: "forward" for the outputs, otherwise the engine scenario whose loss the input gradients are of.
      status: `same`; `differs` (a difference that can change what is learned, or the rewrite fails where the
        original runs); `error` (the verification could not run: import error, crash, timeout, missing entry);
        `unsupported` (the original itself cannot run this scenario: nothing to be equivalent to);
        `skipped` (the scenario does not apply to the entry's outputs; `message` says why).
      differences: what differs in outputs (`output[i]`) or input gradients (`input_grad[i]`), with the
        checker's kinds; representation-only ones (`none_vs_zeros`) leave the status `same`.
      upstream: what the gradient functions received, compared where both sides could be instrumented,
        else why not ("not observable: ..."); informational, it never sets the status.
      upstream_differences: differences between the upstreams, when they were compared.
      upstream_status: `upstream` as a status (`UpstreamStatus`); None for the forward row, which has none.
    """

    entry: str
    scenario: str
    context: str
    status: VerifyStatus
    differences: tuple[Difference, ...] = ()
    message: str = ""
    upstream: str = "not observable"
    upstream_differences: tuple[Difference, ...] = ()
    upstream_status: UpstreamStatus | None = "not_observable"

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "scenario": self.scenario, "context": self.context, "status": self.status,
                "message": self.message, "differences": [difference_dict(d) for d in self.differences],
                "upstream": self.upstream, "upstream_status": self.upstream_status,
                "upstream_differences": [difference_dict(d) for d in self.upstream_differences]}


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    """The proof (or not) that a rewritten module computes what the original did.

    `ok` (EQUIVALENT) holds when no cell `differs` or is an `error`, every entry's forward and at least one of
    its gradient scenarios were compared (`same`) in every context, and nothing the original holds was left
    unverified (`not_verified`: functions whose inputs could not be inferred, methods, module-level code).
    `skipped` cells (the scenario does not apply) and `unsupported` ones (TensorFlow refuses the scenario for
    the original) are not compared, and the summary says how many there are.

    Attributes:
      notes: entry -> what a reader must know (how its inputs were inferred; that its forward is random).
      not_verified: place -> why it was not verified and what to declare so that it is.
    """

    original: str
    rewritten: str
    entries: tuple[str, ...]
    scenarios: tuple[str, ...]
    contexts: tuple[str, ...]
    cells: tuple[VerifyCell, ...]
    tensorflow: str = ""
    elapsed_s: float = 0.0
    notes: dict[str, str] = dataclasses.field(default_factory=dict)
    not_verified: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (bool(self.cells) and all(cell.status in _PASSING for cell in self.cells) and not self.not_verified
                and not self.uncompared())

    def uncompared(self) -> tuple[str, ...]:
        """"`entry` in `context`: ..." for each entry and context whose forward or every gradient scenario went
        uncompared: a proof needs both."""
        missing = []
        for entry in self.entries:
            for context in self.contexts:
                cells = [c for c in self.cells if (c.entry, c.context) == (entry, context)]
                if any(c.status in ("differs", "error") for c in cells):
                    continue  # the failing cells say more
                rows = {c.scenario for c in cells}
                if "forward" in rows and not any(c.scenario == "forward" and c.status == "same" for c in cells):
                    missing.append(f"`{entry}` in {context}: its outputs were not compared")
                elif rows - {"forward"} and not any(c.scenario != "forward" and c.status == "same" for c in cells):
                    missing.append(f"`{entry}` in {context}: no gradient was compared (every scenario was skipped "
                                   f"or unsupported)")
        return tuple(missing)

    @property
    def failures(self) -> tuple[VerifyCell, ...]:
        return tuple(cell for cell in self.cells if cell.status not in _PASSING)

    def counts(self) -> dict[str, int]:
        return {status: sum(cell.status == status for cell in self.cells) for status in VERIFY_STATUSES}

    def cell(self, entry: str, scenario: str, context: str) -> VerifyCell:
        """The cell for `entry`, `scenario` ("forward" for the outputs) and `context`."""
        for cell in self.cells:
            if (cell.entry, cell.scenario, cell.context) == (entry, scenario, context):
                return cell
        raise KeyError(f"no cell for entry `{entry}`, scenario `{scenario}`, context `{context}`; entries "
                       f"{list(self.entries)}, scenarios {['forward', *self.scenarios]}, contexts "
                       f"{list(self.contexts)}")

    def to_json(self) -> dict[str, Any]:
        from compat._version import __version__
        from compat.dtypes import TOLERANCES

        return {"tool": "gradcompat verify", "version": __version__, "original": self.original,
                "rewritten": self.rewritten, "tensorflow": self.tensorflow, "ok": self.ok,
                "reference": "the original module in a tf.compat.v1 Session",
                "tolerances": {name: dataclasses.asdict(t) for name, t in TOLERANCES.items()},
                "entries": list(self.entries), "scenarios": list(self.scenarios), "contexts": list(self.contexts),
                "summary": self.counts(), "compared": self.counts()["same"], "cell_count": len(self.cells),
                "uncompared": list(self.uncompared()), "notes": self.notes, "not_verified": self.not_verified,
                "elapsed_s": round(self.elapsed_s, 3), "cells": [cell.to_json() for cell in self.cells]}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> VerifyReport:
        """The report `to_json` wrote (its `elapsed_s` rounded to the millisecond), e.g. to render it again."""
        cells = tuple(VerifyCell(
            entry=c["entry"], scenario=c["scenario"], context=c["context"], status=c["status"],
            differences=tuple(difference_from_dict(d) for d in c["differences"]), message=c["message"],
            upstream=c["upstream"], upstream_status=c.get("upstream_status", "not_observable"),
            upstream_differences=tuple(difference_from_dict(d) for d in c["upstream_differences"]))
            for c in document["cells"])
        return cls(original=document["original"], rewritten=document["rewritten"],
                   entries=tuple(document["entries"]), scenarios=tuple(document["scenarios"]),
                   contexts=tuple(document["contexts"]), cells=cells, tensorflow=document["tensorflow"],
                   elapsed_s=document["elapsed_s"], notes=dict(document["notes"]),
                   not_verified=dict(document["not_verified"]))

    def summary(self) -> str:
        """"EQUIVALENT: 30 of 34 cells compared, all the same; 4 skipped (...)" or why not."""
        counts = self.counts()
        verdict = "EQUIVALENT" if self.ok else "NOT PROVEN EQUIVALENT"
        parts = [f"{counts['same']} of {len(self.cells)} cells compared and the same"]
        parts += [f"{counts[status]} {status}" for status in ("differs", "error") if counts[status]]
        if counts["skipped"]:
            parts.append(f"{counts['skipped']} skipped (the scenario does not apply)")
        if counts["unsupported"]:
            parts.append(f"{counts['unsupported']} unsupported (TensorFlow refuses them for the original, or both "
                         f"sides fail alike: not compared)")
        if self.not_verified:
            parts.append(f"{len(self.not_verified)} place(s) not verified")
        return f"{verdict}: " + "; ".join(parts)

    def render_text(self) -> str:
        lines = [f"compat.verify: {self.rewritten} against {self.original} (TensorFlow {self.tensorflow or '?'}): "
                 f"{self.summary()}",
                 "reference: the original in a tf.compat.v1 Session; tolerances per dtype as in compat-check"]
        lines += [f"not compared: {text}" for text in self.uncompared()]
        lines += [f"not verified: {place}: {why}" for place, why in self.not_verified.items()]
        lines += [f"note: `{entry}`: {note}" for entry, note in self.notes.items()]
        width = max([len("scenario"), len("forward"), *(len(s) for s in self.scenarios)]) + 2
        for entry in self.entries:
            lines += ["", f"entry `{entry}`", "  " + "scenario".ljust(width)
                      + "".join(context.ljust(16) for context in self.contexts)]
            for scenario in ("forward", *self.scenarios):
                row = [c for c in self.cells if c.entry == entry and c.scenario == scenario]
                if row:
                    by_context = {c.context: c.status for c in row}
                    lines.append("  " + scenario.ljust(width)
                                 + "".join(by_context.get(context, "-").ljust(16) for context in self.contexts))
        details = self._details()
        if details:
            lines += ["", "details (cells that say the same are grouped):"]
        return "\n".join(lines + details) + "\n"

    def _details(self) -> list[str]:
        """Lines for every cell that is not plainly `same` or `skipped`; scenarios whose cells say the same in
        the same contexts are grouped."""
        by_scenario: dict[tuple[str, tuple[str, ...], str], list[str]] = {}
        for cell in self.cells:
            if cell.status in ("same", "skipped") and not cell.differences and not cell.upstream_differences:
                continue
            text: list[str] = [f"{cell.status}" + (f": {cell.message}" if cell.message else "")]
            text += [f"    {d.where}: {d.kind}: {d.detail}" for d in cell.differences]
            if cell.upstream_differences:
                text.append(f"    upstream (informational): {cell.upstream}")
                text += [f"      {d.where}: {d.kind}: {d.detail}" for d in cell.upstream_differences]
            by_scenario.setdefault((cell.entry, tuple(text), cell.scenario), []).append(cell.context)
        grouped: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
        for (entry, lines_of_cell, scenario), contexts in by_scenario.items():
            grouped.setdefault((entry, lines_of_cell, tuple(contexts)), []).append(scenario)
        lines = []
        for (entry, lines_of_cell, in_contexts), scenarios in grouped.items():
            lines.append(f"  {entry} / {', '.join(scenarios)} / {', '.join(in_contexts)}: {lines_of_cell[0]}")
            lines += lines_of_cell[1:]
        return lines
