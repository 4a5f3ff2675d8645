"""Shared fixtures: quiet TensorFlow, and the seed's spec (sign forward, straight-through gradient × 0.5)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

import compat
from compat.distribute import use_logical_cpus

# Third-party files of the real-code corpus (tests/data/real): data for benchmarks/rewrite_real.py, never tests,
# whatever their names (`tf_grouping_op_test.py` is a common one).
collect_ignore_glob = ["data/real/*"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true",
                     help="also run the tests marked `slow` (whole-system runs of the catalogue, the guide, "
                          "the benchmarks): CI runs them, the default run leaves them out to stay under 15 minutes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: a whole-system run; `pytest --runslow` runs it (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# Before any test runs a TensorFlow op: the mirrored contexts need 2 logical CPUs (tests/distribute).
_LOGICAL_CPUS_PROBLEM = use_logical_cpus()


def seed_spec(name: str = "seed_scaled_ste") -> compat.GradientSpec:
    """The seed question's op: y = sign(x), gradient 0.5 * upstream, overriding the Sign op type."""
    import tensorflow as tf

    return compat.GradientSpec(
        name=name,
        forward=lambda x: tf.sign(x),
        gradient=lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
        example_inputs=[np.array([1.0, -2.0, 3.0], np.float32)],
        op_type="Sign",
    )


@pytest.fixture(name="seed_spec", scope="session")
def seed_spec_fixture():
    """A factory for the seed spec under a given name."""
    return seed_spec


@pytest.fixture(name="give_to_nobody")
def give_to_nobody_fixture(tmp_path_factory: pytest.TempPathFactory):
    """`give_to_nobody(path)`: chown `path` to nobody:nogroup (65534); the test is skipped where that is not
    possible (not root, or a sandbox whose user namespace maps no such user, as Bazel's does)."""
    probe = tmp_path_factory.mktemp("chown") / "probe"
    probe.write_text("")
    try:
        os.chown(probe, 65534, 65534)
    except OSError as exc:
        pytest.skip(f"cannot give a file to another user here (chown to 65534: {exc.strerror}): needs root outside "
                    f"a user-namespace sandbox")
    return lambda path: os.chown(path, 65534, 65534)
