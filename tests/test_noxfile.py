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


def _noxfile(monkeypatch):
    """noxfile.py loaded afresh (nox, or the stand-in, must be in place first)."""
    spec = importlib.util.spec_from_file_location("gradcompat_noxfile", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    return noxfile


class _RecordingSession(_FailingSession):
    def install(self, *args):
        pass


def test_a_shard_session_runs_its_shard_into_its_own_report(tmp_path, monkeypatch):
    _nox_or_stand_in(monkeypatch)
    noxfile = _noxfile(monkeypatch)
    monkeypatch.chdir(tmp_path)
    session = _RecordingSession(None)
    noxfile._check(session, "2.21", (2, 3))
    check = [args for args in session.ran if args[0] == "compat-check"]
    assert check == [("compat-check", "--format=json", "--output=reports/check-tf2.21-shard2of3.json", "--shard=2/3")]
    assert "check-2.21-shard2of3" in noxfile.shard_sessions()


def test_only_the_first_shard_of_an_uninstallable_release_writes_its_skip_record(tmp_path, monkeypatch):
    CommandFailed = _nox_or_stand_in(monkeypatch)  # noqa: N806
    noxfile = _noxfile(monkeypatch)
    monkeypatch.chdir(tmp_path)
    for index in (1, 2):
        with pytest.raises(_Skipped):
            noxfile._check(_FailingSession(CommandFailed("Returned code 1")), "2.13", (index, 3))
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["check-tf2.13-shard1of3.json"]


def test_the_merge_session_merges_every_report_already_there(tmp_path, monkeypatch):
    _nox_or_stand_in(monkeypatch)
    noxfile = _noxfile(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    for name in ("check-tf2.21-shard2of3.json", "check-tf2.21-shard1of3.json", "check-tf2.20.json", "other.json"):
        (tmp_path / "reports" / name).write_text("{}")
    session = _RecordingSession(None)
    noxfile.merge(session)
    assert session.ran == [(sys.executable, "-m", "compat.releases", "reports/check-tf2.20.json",
                            "reports/check-tf2.21-shard1of3.json", "reports/check-tf2.21-shard2of3.json",
                            "--output_dir=reports")]


def test_the_ci_template_is_what_the_noxfile_gives(monkeypatch):
    _nox_or_stand_in(monkeypatch)
    tools = importlib.util.spec_from_file_location("gen_ci_template", ROOT / "tools" / "gen_ci_template.py")
    generator = importlib.util.module_from_spec(tools)
    tools.loader.exec_module(generator)
    assert generator.TEMPLATE.read_text(encoding="utf-8") == generator.render(_noxfile(monkeypatch)), (
        "ci-templates/github-actions.yml is out of date: run python tools/gen_ci_template.py")


def _listed(*selection):
    import json
    import shutil
    import subprocess

    if shutil.which("nox") is None:
        pytest.skip("nox is not installed (pip install -e '.[dev]'): cannot list the sessions")
    done = subprocess.run(["nox", "--json", "-l", *selection], cwd=ROOT, capture_output=True, text=True, check=True)
    return [session["session"] for session in json.loads(done.stdout)]


def test_the_ci_templates_jobs_are_the_noxfiles_shard_sessions_then_merge():
    text = (ROOT / "ci-templates" / "github-actions.yml").read_text(encoding="utf-8")
    jobs = [line.split("- ", 1)[1] for line in text.splitlines() if line.startswith("          - check-")]
    assert jobs == _listed("-t", "check-shards")
    assert len(jobs) == 30  # 10 releases x 3 shards
    assert "run: nox -s merge" in text and _listed("-s", "merge") == ["merge"]
