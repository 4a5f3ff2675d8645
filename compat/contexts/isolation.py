"""Failure isolation: run cases as one batch; when the batch fails, find its failing cases by runs of their own."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from compat.contexts.base import Case

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

Attempt = Callable[[list[K]], tuple[dict[K, R], list[K]]]
"""`attempt(batch) -> (settled, failed)`: run `batch` together; the outcomes it settled (a case that failed to
build, or every case when the run succeeded), and the cases whose joint run failed. A one-case batch it always
settles: its failure is that case's own."""


def _nothing(key: object) -> None:
    return None


def isolate(keys: Sequence[K], attempt: Attempt[K, R], before_run: Callable[[K], None] = _nothing,
            variant: Callable[[K], str] = lambda key: "") -> dict[K, R]:
    """Every case's outcome, from one `attempt` of `keys` together, or, when that run fails, from runs that find
    the failing cases; `before_run(key)` is called for each case of a batch before every attempt of it, so the
    run-time records a case reports are those of the run its outcome comes from.

    Cases of one variant tend to fail alike: failed cases of several variants are split into their variants; one
    variant is halved, and when both halves fail too, failures are dense there and each case runs alone
    (bisecting a variant where every case fails would run it about twice per case).
    """
    outcomes: dict[K, R] = {}
    if not keys:
        return outcomes

    def run(batch: list[K]) -> list[K]:
        for key in batch:
            before_run(key)
        settled, failed = attempt(batch)
        outcomes.update(settled)
        if failed and len(batch) == 1:
            raise AssertionError(f"an attempt of one case left it unsettled ({batch[0]!r})")
        return failed

    failed = run(list(keys))
    if failed:
        _settle(failed, run, variant)
    return outcomes


def _settle(failed: list[K], run: Callable[[list[K]], list[K]], variant: Callable[[K], str]) -> None:
    groups: dict[str, list[K]] = {}
    for key in failed:
        groups.setdefault(variant(key), []).append(key)
    middle = len(failed) // 2
    parts = list(groups.values()) if len(groups) > 1 else [failed[:middle], failed[middle:]]
    still_failing = [part_failed for part_failed in (run(part) for part in parts) if part_failed]
    if len(groups) == 1 and len(still_failing) == 2:
        for key in (*still_failing[0], *still_failing[1]):
            run([key])
        return
    for part_failed in still_failing:
        _settle(part_failed, run, variant)


def isolate_cases(cases: Sequence[Case], indices: Sequence[int], attempt: Attempt[int, R]) -> dict[int, R]:
    """`isolate` for `cases[i]` by index: each case's own `before_run`, split by its probe's variant."""

    def variant(index: int) -> str:
        probe = cases[index].probe
        return probe.variant if probe is not None else ""

    return isolate(indices, attempt, lambda index: cases[index].before_run(), variant)


def run_alone(case: Case, run: Callable[[], R]) -> R:
    """One attempt of one case on its own (a context that runs each case apart, eagerly): `before_run`, then `run`."""
    case.before_run()
    return run()
