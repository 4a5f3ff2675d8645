"""Tests for compat/naming.py: per-key numbering and ASCII word names."""

from __future__ import annotations

import threading

import pytest

from compat.naming import ascii_word, next_number


def test_numbers_count_per_key_and_namespace():
    first = next_number("test ns", "alpha")
    next_number("test ns", "beta")
    next_number("other ns", "alpha")
    assert next_number("test ns", "alpha") == first + 1
    assert next_number("never used ns", "alpha") == 0


def test_numbers_never_repeat_across_threads():
    taken: list[int] = []

    def take() -> None:
        taken.extend(next_number("threads", "key") for _ in range(200))

    workers = [threading.Thread(target=take) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(taken) == list(range(1600))


@pytest.mark.parametrize(
    ("name", "keep", "expected"),
    [
        ("my spec/v2", "", "my_spec_v2"),
        ("_private", "", "private"),
        ("градиент", "", "spec"),
        ("<op>", "", "op"),
        ("a.b_c d", "_.", "a.b_c_d"),
        ("._x_.", "_.", "x"),
    ],
)
def test_ascii_word(name, keep, expected):
    assert ascii_word(name, keep=keep) == expected
