"""The guide's sentences, each computed from the guide run, so no claim in its prose is typed in by hand."""

from __future__ import annotations

import numpy as np

from compat.checker import Cell, CheckReport
from compat.registry import CONTEXT_INFO, CONTEXT_NAMES, DEFUN_MECHANISMS, TF1_MECHANISMS
from compat.results import Upstream
from tools.guide.run import cells
from tools.guide.tables import CONTEXT_HEADERS, CONTEXTS, values

_NATIVE_V1 = tuple(f"{m}@v1_session" for m in TF1_MECHANISMS)
_CUSTOM = tuple(f"custom_gradient@{c}" for c in CONTEXTS)


def _ticks(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def _called(cell: Cell | None) -> bool:
    return cell is not None and cell.result.upstream is not None


def _upstreams(cell: Cell | None) -> tuple[Upstream, ...]:
    """The first call's upstreams, or () where the gradient function never ran."""
    return () if cell is None or cell.result.upstream is None else tuple(cell.result.upstream)


def always_ones(report: CheckReport, spec: str = "ste") -> str:
    """Answers "is the upstream always ones?" from the values each documented mechanism received."""
    by_key = cells(report, spec)
    scenarios = [s for s in report.scenarios if any(k[0] == s for k in by_key)]
    ones, other, slices, never = [], [], [], []
    for scenario in scenarios:
        ran = [c for v in (*_NATIVE_V1, *_CUSTOM) if _called(c := by_key.get((scenario, v)))]
        if not ran:
            never.append(scenario)
            continue
        upstreams = [_upstreams(c)[0] for c in ran]
        if any(u.kind == "indexed_slices" for u in upstreams):
            slices.append(scenario)
        if all(u.kind == "dense" and u.value is not None and np.all(u.value == 1) for u in upstreams):
            ones.append(scenario)
        else:
            other.append(scenario)
    dense_in_slices = [v.split("@")[0] for v in (*_NATIVE_V1, *_CUSTOM)
                       if slices and all(_called(by_key.get((s, v))) and _upstreams(by_key.get((s, v)))[0].kind
                                         == "dense" for s in slices)]
    return (f"**No.** Of the {len(scenarios)} downstream computations below, the upstream is all ones only for "
            f"{_ticks(ones)}; in {_ticks(other)} it is something else, the derivative of what follows your op. "
            f"After `tf.gather` ({_ticks(slices)}) it is an `IndexedSlices` (values at indices), except for "
            f"{_ticks(sorted(set(dense_in_slices)))}, which receives it dense. Under {_ticks(never)} your gradient "
            "function is not called at all.")


def override_contexts(report: CheckReport, spec: str = "ste") -> str:
    """Where RegisterGradient + gradient_override_map is honoured, and what the input gradient is where not."""
    by_key = cells(report, spec)
    scenarios = [s for s in report.scenarios if any(k[0] == s for k in by_key) and
                 any(_called(by_key.get((s, v))) for v in _CUSTOM)]
    honoured = [c for c in CONTEXTS if all(_called(by_key.get((s, f"override_map@{c}"))) for s in scenarios)]
    ignored = [c for c in CONTEXTS if not any(_called(by_key.get((s, f"override_map@{c}"))) for s in scenarios)]
    sample = by_key.get((scenarios[0], f"override_map@{ignored[0]}")) if ignored and scenarios else None
    grads = sample.result.input_grads if sample is not None else ()
    instead = values(grads[0]) if grads else "None"
    return (f"In the run, with the map entered where the op is built, the override is honoured in "
            f"{', '.join(CONTEXT_HEADERS[c] for c in honoured)} and **silently ignored** in "
            f"{', '.join(CONTEXT_HEADERS[c] for c in ignored)} (in each of the {len(scenarios)} scenarios where "
            f"`tf.custom_gradient` is called): there TensorFlow uses the op's own gradient, so for `Sign` your "
            f"input gradient is `{instead}` in `{scenarios[0] if scenarios else ''}`, with no error.")


def unused_outputs(report: CheckReport, spec: str = "multi_output_int", scenario: str = "unused_output") -> str:
    """Which upstreams are None for unused outputs: float ones (y2) and the integer one (y1)."""
    by_key = cells(report, spec)
    ran = [(v, _upstreams(by_key.get((scenario, v)))) for v in report.variants if _called(by_key.get((scenario, v)))]
    float_none = [v for v, upstreams in ran if upstreams[2].kind == "none"]
    int_none = [v for v, upstreams in ran if upstreams[1].kind == "none"]
    int_none_contexts = [c for c in CONTEXT_NAMES if c in {v.split("@")[1] for v in int_none}]
    by_tf_gradients = all(not CONTEXT_INFO[c].uses_tape for c in int_none_contexts)
    why = ", the contexts that call `tf.gradients`" if by_tf_gradients else ""
    int_zeros = [v for v, c in ran if v not in int_none]
    float_text = ("arrives as **zeros** in every one of them" if not float_none
                  else f"arrives as None in {_ticks(float_none)} and zeros elsewhere")
    return (f"{len(ran)} variants called the gradient function. The unused float output `y2` {float_text}. "
            f"**None** appears only for the integer output `y1`, and only in "
            f"{', '.join(CONTEXT_HEADERS.get(c, f'`{c}`') for c in int_none_contexts)}{why} "
            f"({_ticks(int_none)}); the others ({_ticks(int_zeros)}) get int32 zeros. A gradient function must "
            "therefore accept None for "
            "integer outputs and must not read zeros as \"unused\".")


def defun_limits(report: CheckReport, spec: str = "ste") -> str:
    """What a Defun cannot do, and the static shape its gradient sees, from the run."""
    by_key = cells(report, spec)
    eager = {m: by_key[("sum", f"{m}@eager_tape")].status for m in DEFUN_MECHANISMS}
    second = by_key[("second_order", "defun_grad_func@v1_session")].status
    second_py = by_key[("second_order", "defun_python_grad_func@v1_session")].status
    seen = by_key[("sum", "defun_grad_func@v1_session")].result.upstream
    eager_seen = by_key[("sum", "custom_gradient@eager_tape")].result.upstream
    shape = "unknown rank" if not seen or seen[0].static_shape is None else str(list(seen[0].static_shape))
    custom_shape = "unknown rank" if not eager_seen or eager_seen[0].static_shape is None else str(
        list(eager_seen[0].static_shape))
    tapes = [CONTEXT_HEADERS[c] for c in ("v1_tape", "function_tape")
             if by_key[("sum", f"defun_grad_func@{c}")].status == "not_called"]
    return (f"Called eagerly, a Defun is `{eager['defun_grad_func'].replace('_', ' ')}` (grad_func) and "
            f"`{eager['defun_python_grad_func'].replace('_', ' ')}` (python_grad_func); under "
            f"{' and '.join(tapes) or 'no tape'} its gradient function is not called. Second order through a "
            f"`grad_func` is `{second.replace('_', ' ')}`, through a `python_grad_func` "
            f"`{second_py.replace('_', ' ')}`. Inside a `grad_func` the upstream's static shape is {shape} while "
            f"building; `tf.custom_gradient` called eagerly sees {custom_shape}: code that branches on `dy.shape` "
            "takes another path after migration.")
