"""Compare every report the apps write at a base commit with the working tree's, byte for byte.

    python tools/report_identity.py --base=955dbee                 # a small check, audit, rewrite: minutes
    python tools/report_identity.py --base=955dbee --catalogue      # compat-check on the whole default catalogue
    python tools/report_identity.py --base=955dbee --small          # one spec: what the test runs

For a refactor that must not change what users read (issue #28). The base commit is exported with `git archive`
into a temporary directory, and each side runs its own code in child processes (PYTHONPATH names the side, so an
editable install of either does not interfere), on the same inputs:
- compat-check: one run writes JSON; that side's compat-merge renders it as table, table --details, markdown,
  HTML and JSON again (a report rendered from JSON equals the app's own; tests/apps/test_merge_app.py);
- compat-audit on tests/data/legacy: text, JSON, SARIF and markdown;
- compat-rewrite on a copy of tests/data/legacy: the diff and JSON.
Only the per-unit seconds of a check's and a rewrite's JSON report are masked. Exit 0 when every report is
identical, 1 when one differs (the first differing lines are printed), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from compat.reports.timings import without_timings  # noqa: E402  (this checkout's, applied to both sides)

SMALL_CHECK = ["--specs=scaled_ste,two_input_mul,multi_output_int", "--scenarios=sum,gather,unused_output,second_order",
               "--variants=*@v1_session,*@eager_tape,*@function_tape,*@saved_model"]
TINY_CHECK = ["--specs=scaled_ste", "--scenarios=sum,gather,second_order",
              "--variants=*@v1_session,*@eager_tape,*@saved_model"]
"""--small: what tests/test_report_identity.py runs."""
RENDERINGS = {"table": ["--format=table"], "details": ["--format=table", "--details"],
              "markdown": ["--format=markdown"], "html": ["--format=html"], "json": ["--format=json"]}
AUDIT_FORMATS = ("text", "json", "sarif", "markdown")


def export(ref: str, into: Path) -> Path:
    """The tree of commit `ref` under `into`, or SystemExit(2) naming what git said."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--base={ref}: git archive failed: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _app(side: Path, module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(side), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=3600)


def _written(done: subprocess.CompletedProcess[str], path: Path, what: str) -> bytes:
    if not path.exists():
        raise SystemExit(f"{what} wrote no report (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return path.read_bytes()


def _untimed(data: bytes) -> bytes:
    return json.dumps(without_timings(json.loads(data)), indent=1, sort_keys=True).encode()


def check_reports(side: Path, work: Path, out: Path, check_args: list[str]) -> dict[str, bytes]:
    """compat-check's JSON report and its renderings by the same side's compat-merge."""
    source = out / "check.json"
    done = _app(side, "compat.apps.check", [*check_args, "--format=json", f"--output={source}", "--noprogress"], work)
    reports = {"check json": _untimed(_written(done, source, "compat-check"))}
    for name, flags in RENDERINGS.items():
        target = out / f"check.{name}"
        merged = _app(side, "compat.apps.merge", [str(source), *flags, f"--output={target}"], work)
        data = _written(merged, target, f"compat-merge {' '.join(flags)}")
        reports[f"check rendered {name}"] = _untimed(data) if name == "json" else data
    return reports


def audit_reports(side: Path, work: Path, out: Path) -> dict[str, bytes]:
    legacy = ROOT / "tests" / "data" / "legacy"
    reports = {}
    for fmt in AUDIT_FORMATS:
        target = out / f"audit.{fmt}"
        done = _app(side, "compat.apps.audit", [f"--format={fmt}", f"--output={target}", "--jobs=1", str(legacy)],
                    work)
        reports[f"audit {fmt}"] = _written(done, target, f"compat-audit --format={fmt}")
    return reports


def rewrite_reports(side: Path, work: Path) -> dict[str, bytes]:
    tree = work / "legacy"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT / "tests" / "data" / "legacy", tree)
    reports = {}
    for fmt in ("text", "json"):
        done = _app(side, "compat.apps.rewrite", [f"--format={fmt}", "legacy"], work)
        shown = _untimed(done.stdout.encode()).decode() if fmt == "json" else done.stdout
        reports[f"rewrite {fmt}"] = (shown + f"\nexit {done.returncode}\n").encode()
    return reports


def side_reports(side: Path, work: Path, out: Path, check_args: list[str]) -> dict[str, bytes]:
    """Every report of one side; `work`, the directory the apps run in, is the same for both sides (SARIF names
    it, the rewrite's report names the files under it)."""
    work.mkdir(exist_ok=True)
    out.mkdir()
    return {**check_reports(side, work, out, check_args), **audit_reports(side, work, out),
            **rewrite_reports(side, work)}


def differences(base: dict[str, bytes], head: dict[str, bytes]) -> list[str]:
    """One paragraph per report that differs: its name and the first lines of a unified diff."""
    found = []
    for name in base:
        if base[name] != head.get(name):
            diff = difflib.unified_diff(base[name].decode(errors="replace").splitlines(),
                                        head.get(name, b"").decode(errors="replace").splitlines(),
                                        "base", "head", lineterm="", n=1)
            found.append(f"{name} differs:\n" + "\n".join(list(diff)[:30]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit whose reports are the reference (git rev)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--catalogue", action="store_true", help="check the whole default catalogue")
    size.add_argument("--small", action="store_true", help="check one spec in three scenarios and contexts")
    args = parser.parse_args(argv)
    check_args = [] if args.catalogue else TINY_CHECK if args.small else SMALL_CHECK
    with tempfile.TemporaryDirectory(prefix="report-identity-") as tmp:
        base_tree = export(args.base, Path(tmp) / "base-tree")
        work = Path(tmp) / "work"
        base = side_reports(base_tree, work, Path(tmp) / "base", check_args)
        head = side_reports(ROOT, work, Path(tmp) / "head", check_args)
    found = differences(base, head)
    for paragraph in found:
        print(paragraph)
    print(f"{len(base) - len(found)} of {len(base)} reports identical to {args.base}'s"
          + ("" if not found else f"; {len(found)} differ"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
