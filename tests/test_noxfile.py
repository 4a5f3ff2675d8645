"""noxfile.py's check sessions: a release that cannot be installed leaves a skip record the matrix lists."""

import importlib.util
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class _Skipped(Exception):
    pass


class _FailingSession:
    """A nox session whose installs fail, as pip does when a release has no wheel for this Python."""

    posargs: list[str] = []

    def __init__(self, failure):
        self.failure = failure
        self.ran = []

    def install(self, *args):
        raise self.failure

    def skip(self, reason):
        raise _Skipped(reason)

    def run(self, *args, **kwargs):
        self.ran.append(args)


def _nox_or_stand_in(monkeypatch):
    """nox where installed (the dev extra), else a stand-in with what noxfile.py uses at import time."""
    try:
        import nox.command

        return nox.command.CommandFailed
    except ImportError:
        pass

    class CommandFailed(Exception):
        def __init__(self, reason=None):
            super().__init__(reason)
            self.reason = reason

    command = types.SimpleNamespace(CommandFailed=CommandFailed)
    stand_in = types.SimpleNamespace(session=lambda *a, **k: (lambda func: func), options=types.SimpleNamespace(),
                                     Session=object, command=command)
    monkeypatch.setitem(sys.modules, "nox", stand_in)
    monkeypatch.setitem(sys.modules, "nox.command", command)
    return CommandFailed


def test_an_uninstallable_release_is_a_skip_record_with_the_reason(tmp_path, monkeypatch):
    CommandFailed = _nox_or_stand_in(monkeypatch)  # noqa: N806
    spec = importlib.util.spec_from_file_location("gradcompat_noxfile", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    monkeypatch.chdir(tmp_path)
    session = _FailingSession(CommandFailed("Returned code 1"))
    with pytest.raises(_Skipped, match="TensorFlow 2.13 could not be installed for Python 3.11: Returned code 1"):
        noxfile._check(session, "2.13")
    assert session.ran == []  # compat-check never ran
    from compat.releases import load_report, merge

    record = load_report(tmp_path / "reports" / "check-tf2.13.json")
    assert merge([record])["releases"] == [{"release": "2.13", "tensorflow": None, "status": "skipped",
                                            "reason": record["release_skipped"], "exit_code": None, "verdict": ""}]
