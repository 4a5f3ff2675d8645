"""Fixtures for running a user's suite with pytester in this process."""

import importlib.metadata

import pytest

# Imported once here: pytester's in-process runs forget the modules they import, and these register
# TensorFlow gradients that cannot be registered twice.
import compat.testing._assertions  # noqa: F401
import compat.testing.absl  # noqa: F401
import compat.testing.plugin  # noqa: F401


@pytest.fixture(name="plugin_args")
def plugin_args_fixture() -> list[str]:
    """Arguments for `runpytest_inprocess`: load the plugin, unless its entry point is installed, and stay quiet.

    Skips hypothesis's plugin (it would import hypothesis anew in each run, seconds each) and the warning
    that the plugin, imported here first, cannot be assertion-rewritten.
    """
    installed = any(e.name == "gradcompat" for e in importlib.metadata.entry_points(group="pytest11"))
    quiet = ["-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return quiet + ([] if installed else ["-p", "compat.testing.plugin"])
