"""The pytest plugin (entry point `pytest11: gradcompat`): the `gradcompat` marker, `--gradcompat-variants`.

pytest imports it in every session of every user who installed gradcompat, so it imports neither TensorFlow
nor compat's engine: variant names are resolved only when a test asks for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from compat.testing._selection import Selection, resolve_variants

MARKER = "gradcompat"
OPTION = "--gradcompat-variants"

_Test = TypeVar("_Test", bound=Callable[..., Any])


def parametrize_variants(selection: Selection = "native") -> Callable[[_Test], _Test]:
    """Run the decorated test once per selected variant, passing its name as the `variant` argument.

        @compat.testing.parametrize_variants("native")
        def test_ste(variant):
            result = compat.testing.run_variant(STE, variant)
            assert result.status == "ok"

    Test ids read `test_ste[custom_gradient@eager_tape]`; select one with its node id or
    `-k "custom_gradient and eager_tape"` (pytest's -k does not accept `@`), or narrow every such test with
    `--gradcompat-variants "*@eager_tape"`.

    Args:
      selection: `"native"`, `"cross"`, `"all"`, globs (`"*@v1_session"`) or a list of them.
    """
    names = resolve_variants(selection)

    def decorate(test: _Test) -> _Test:
        marked = pytest.mark.parametrize("variant", names, ids=list(names))(test)
        return pytest.mark.gradcompat(selection)(marked)  # type: ignore[no-any-return]

    return decorate


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("gradcompat").addoption(
        OPTION, dest="gradcompat_variants", default=None, metavar="SELECTION",
        help="run gradcompat-parametrised tests only in these variants: 'native', 'cross', 'all', "
             "a glob like '*@v1_session', or several, comma-separated")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(selection='native'): run the test once per gradcompat variant (mechanism@context) "
                   f"the selection picks, passing its name as the `variant` argument; narrowed by {OPTION}")
    if config.getoption("gradcompat_variants") and _distributes_to_xdist_workers(config):
        # xdist's controller collects nothing, and a UsageError raised in a worker's collection reaches the
        # user as an INTERNALERROR without its message: check the option here, before any worker starts.
        _allowed_variants(config.getoption("gradcompat_variants"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked `@pytest.mark.gradcompat(...)` (not by `parametrize_variants`) is parametrised here."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "variant" not in metafunc.fixturenames:
        return
    if any("variant" in _argnames(m) for m in metafunc.definition.iter_markers("parametrize")):
        return
    names = resolve_variants(marker.args[0] if marker.args else marker.kwargs.get("selection", "native"))
    metafunc.parametrize("variant", names, ids=list(names))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the variants `--gradcompat-variants` leaves out."""
    option = config.getoption("gradcompat_variants")
    if not option or not any(item.get_closest_marker(MARKER) for item in items):
        return  # nothing to narrow: do not import TensorFlow to resolve the selection
    allowed = _allowed_variants(option)
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        variant = callspec.params.get("variant") if callspec is not None else None
        if item.get_closest_marker(MARKER) is None or variant is None or variant in allowed:
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _allowed_variants(option: str) -> set[str]:
    """The variants `--gradcompat-variants` selects; a pytest.UsageError naming the option if it selects none."""
    try:
        return set(resolve_variants(option))
    except ValueError as error:
        raise pytest.UsageError(f"{OPTION}: {error}") from None


def _distributes_to_xdist_workers(config: pytest.Config) -> bool:
    """Whether this is pytest-xdist's controller, about to hand the tests to worker processes (`-n N`)."""
    is_worker = hasattr(config, "workerinput")
    return not is_worker and getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None))


def _argnames(marker: pytest.Mark) -> list[str]:
    names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
