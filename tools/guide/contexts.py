"""The guide's section on the contexts beyond the classic five (a tape over tf.function, XLA, mixed precision...):
one table of verdicts per context and mechanism, and the sentences read from the same run."""

from __future__ import annotations

from collections import Counter

from compat.checker import Cell, CheckReport
from tools.guide.run import cells
from tools.guide.tables import CONTEXTS, MECHANISMS, markdown_table, verdict


def later_contexts(report: CheckReport) -> list[str]:
    """The contexts of the run that are not among the classic five, in registry order."""
    seen = dict.fromkeys(v.split("@")[1] for v in report.variants)
    return [c for c in seen if c not in CONTEXTS]


def contexts_table(report: CheckReport, spec: str = "ste") -> str:
    """Rows: context x mechanism; the verdicts of its cells over every scenario, most frequent first."""
    by_key = cells(report, spec)
    scenarios = sorted({s for s, _ in by_key})
    rows = []
    for context in later_contexts(report):
        for mechanism, label in MECHANISMS.items():
            verdicts = Counter(verdict(by_key.get((s, f"{mechanism}@{context}"))) for s in scenarios)
            verdicts.pop("", None)
            rows.append([f"`{context}`", label, ", ".join(f"{n} {v}" for v, n in verdicts.most_common())])
    release = ".".join(report.tensorflow.split(".")[:2])
    heading = f"verdicts over the {len(scenarios)} scenarios (TensorFlow {release})"
    return markdown_table(["context", "mechanism", heading], rows)


def contexts_facts(report: CheckReport, spec: str = "ste") -> str:
    """Which gradient functions each later context calls, where extra zero calls happen, and what mixed
    precision and Keras' fit hand over, read from the run."""
    by_key = cells(report, spec)
    sentences = []
    for context in later_contexts(report):
        context_cells = {m: [c for (_, v), c in by_key.items() if v == f"{m}@{context}"] for m in MECHANISMS}
        statuses = {m: {c.status for c in cs} for m, cs in context_cells.items() if cs}
        never = [MECHANISMS[m] for m, s in statuses.items() if "not_called" in s and s <= {"not_called", "unsupported"}]
        refused = [MECHANISMS[m] for m, s in statuses.items() if s == {"unsupported"}]
        hidden = [MECHANISMS[m] for m, s in statuses.items() if "not_observable" in s]
        parts = [f"{_words(never)} {'is' if len(never) == 1 else 'are'} never called"] if never else []
        parts += [f"TensorFlow refuses {_words(refused)} (`unsupported`)"] if refused else []
        parts += [f"what {_words(hidden)} receives cannot be captured (`not observable`: its gradient is built "
                  "where the probe cannot return it; its input gradients are still compared)"] if hidden else []
        if parts:
            sentences.append(f"Under `{context}`, {'; '.join(parts)}.")
    reruns = sorted({(c.spec, c.context) for c in report.cells if any(d.kind == "zero_calls" for d in c.differences)})
    if reruns:
        where = ", ".join(f"`{s}` under `{ctx}`" for s, ctx in reruns)
        sentences.append(f"For second order, {where}: the gradient function is called again with only zero "
                         "upstreams (`zero_calls`): the values are the same, side effects in it run twice.")
    sentences += _mixed_precision(by_key.get(("scaled", "custom_gradient@mixed_precision")))
    sentences += _keras_fit(by_key.get(("scaled", "custom_gradient@keras_fit")))
    return " ".join(sentences)


def _mixed_precision(cell: Cell | None) -> list[str]:
    if cell is None or cell.result.upstream is None or cell.result.upstream_scale is None:
        return []
    upstream = cell.result.upstream[0]
    return [f"Under `mixed_precision`, for `scaled` (loss `sum(2 y)`), `tf.custom_gradient` receives its upstream as "
            f"{upstream.dtype}, multiplied by the loss scale {cell.result.upstream_scale:g} (reports give it as "
            "`upstream_scale` and compare values after dividing by it): a gradient that clips or thresholds its "
            "upstream acts on the scaled value."]


def _keras_fit(cell: Cell | None) -> list[str]:
    if cell is None or cell.result.upstream is None or cell.result.upstream_scale is None:
        return []
    agree = "agree with" if not any(d.kind == "values" for d in cell.differences) else "differ from"
    return [f"Under `keras_fit`, for `scaled`, `tf.custom_gradient` receives its upstream multiplied by "
            f"{cell.result.upstream_scale:g}, the 1 / batch size that Keras' default `sum_over_batch_size` loss "
            f"reduction declares (`upstream_scale`); divided by it, the values {agree} the reference: a gradient "
            "that clips or thresholds its upstream acts on the divided value."]


def _words(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
