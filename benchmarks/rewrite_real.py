"""Benchmark: compat-rewrite on the real public files of tests/data/real, against issue #23's targets.

Run: `python benchmarks/rewrite_real.py [--files=GLOB] [--json=FILE] [--noimport] [--jobs=N] [--timeout=S]`.
What it measures and why is in benchmarks/README.md (`rewrite_real.py`); exit 0 when every target holds, 1 when
one is missed, 2 on a usage error (no corpus, a glob that matches nothing).
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import dataclasses
import fnmatch
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import load_average  # noqa: E402

from compat.audit import audit_file  # noqa: E402
from compat.rewrite import PATTERNS, rewrite_paths  # noqa: E402
from compat.rewrite.result import FileResult as RewriteResult  # noqa: E402
from compat.rewrite.result import Outcome  # noqa: E402
from compat.verify import EntriesError, verify_rewrite  # noqa: E402
from compat.workers import usable_cpus  # noqa: E402

CORPUS = _ROOT / "tests" / "data" / "real"
OUTCOMES: tuple[str, ...] = typing.get_args(Outcome)  # the rewriter's own outcome names: a new one is a new column
DONE = ("rewritten", "kept")  # outcomes that leave valid TF2 code (issue #23); "kept" counts once the rewriter has it
RULES = tuple(sorted(set(PATTERNS.values())))  # GC001-GC004
LEGACY_NAMES = ("Defun", "RegisterGradient", "gradient_override_map")
LEGACY_PATTERNS = {"RegisterGradient", "gradient_override_map", "grad_func", "python_grad_func"}  # manifest names
RATE_TARGET = 0.85
# Import outcomes that say the file's own dependencies are not here, reported apart and never failures.
BLOCKED = ("dependency_missing", "own_package_missing", "op_library_missing", "fails_as_original")

# Runs in a fresh interpreter per file and side: network refused (module code must not download), TensorFlow as
# the side expects (the original sees tf.compat.v1 with v2 behaviour disabled, as compat.verify runs it), the file
# imported under a unique module name with its own directory importable; the outcome goes to the file argv[3].
_CHILD = """
import json, socket, sys, traceback
side, path, out = sys.argv[1:4]
def _refuse(*args, **kwargs):
    raise OSError("network access refused by benchmarks/rewrite_real.py")
socket.socket.connect = _refuse
socket.create_connection = _refuse
from compat.verify._legacy import import_path, install_legacy_tensorflow
import tensorflow
version = tensorflow.__version__
if side == "original":
    install_legacy_tensorflow()
result = {"tensorflow": version, "status": "ok"}
try:
    import_path(path, side)
except BaseException as exc:
    frames = traceback.extract_tb(exc.__traceback__)
    result = {"tensorflow": version, "status": "raised", "type": type(exc).__name__, "message": str(exc)[:400],
              "missing": getattr(exc, "name", None), "line": frames[-1].lineno if frames else None}
with open(out, "w") as handle:
    json.dump(result, handle)
"""


@dataclasses.dataclass
class FileReport:
    """Everything measured on one corpus file."""

    stored_as: str
    repository: str
    path: str
    audit_sites: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    unparsed: str | None = None
    legacy_names: int = 0
    rewrite_error: str | None = None
    sites: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    changed: bool = False
    parses: bool | None = None
    idempotent: bool | None = None
    defects: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    extra: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    imports: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    entries: bool = False
    """Whether compat.verify found entry points to run (declared or inferred)."""
    verify: str | None = None
    verify_reason: str = ""
    rewritten_text: str = dataclasses.field(default="", repr=False)

    def outcome_counts(self) -> collections.Counter[str]:
        return collections.Counter(site["outcome"] for site in self.sites)


def usage_error(message: str) -> typing.NoReturn:
    print(f"rewrite_real.py: {message}", file=sys.stderr)
    sys.exit(2)


def load_manifest(corpus: Path, pattern: str | None) -> list[dict[str, Any]]:
    """The manifest's entries whose stored file is here: the legacy files `--files` selects (a glob on
    `stored_as`), and every context file (C++ op sources, op-library loaders) of their repositories."""
    manifest = corpus / "MANIFEST.json"
    if not manifest.is_file():
        usage_error(f"no corpus manifest at {manifest}; the corpus is tests/data/real (see its README.md)")
    everything = json.loads(manifest.read_text())["files"]
    entries = [e for e in everything if is_legacy(e) and (not pattern or fnmatch.fnmatch(e["stored_as"], pattern))]
    if not entries:
        usage_error(f"--files={pattern!r} matches no stored_as in {manifest}")
    repositories = {e["repository"] for e in entries}
    entries += [e for e in everything if not is_legacy(e) and e["repository"] in repositories]
    missing = [e["stored_as"] for e in entries if not (corpus / e["stored_as"]).is_file()]
    if missing:
        usage_error(f"{len(missing)} of the {len(entries)} corpus files are not on disk (first: {missing[0]}); "
                    f"they are never committed: restore them as {corpus / 'README.md'} says")
    return entries


def is_legacy(entry: dict[str, Any]) -> bool:
    """Whether the entry is a file with legacy gradient code (else a context file: a C++ op, a loader)."""
    return bool(set(entry["patterns"]) & LEGACY_PATTERNS)


def checkout(corpus: Path, entries: Iterable[dict[str, Any]], root: Path) -> dict[str, Path]:
    """Each entry's file at its own path under `root/<owner>__<repo>/`, as in a checkout of the repository (so
    the rewriter sees the op sources and loaders beside a gradient file): stored_as -> where it is."""
    placed = {}
    for entry in entries:
        target = root / entry["repository"].replace("/", "__") / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / entry["stored_as"], target)
        placed[entry["stored_as"]] = target
    return placed


def rewrite_checkouts(placed: dict[str, Path], root: Path) -> dict[Path, RewriteResult]:
    """compat-rewrite (without --in_place) on each repository's checkout under `root`, as a user runs it."""
    results = {}
    for repository in sorted({path.relative_to(root).parts[0] for path in placed.values()}):
        for result in rewrite_paths([str(root / repository)]):
            results[Path(result.path)] = result
    return results


def legacy_name_count(text: str) -> int:
    """Tokens named Defun, RegisterGradient or gradient_override_map: the sites of a file no parser accepts."""
    try:
        names = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NAME]
    except (tokenize.TokenError, SyntaxError):
        names = re.findall(r"[A-Za-z_]\w*", text)
    return sum(name in LEGACY_NAMES for name in names)


def category(reason: str) -> str:
    """A TODO reason without the user's names, numbers and the how-to part: `gradient "…" is used by no ...`."""
    text = " ".join(reason.split()).split(": ", 1)[0]
    text = re.sub(r"`[^`]*`", "`…`", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", '"…"', text)
    text = re.sub(r"\((?:[A-Z]\w*(?:, )?)+\)", "(…)", text)
    text = re.sub(r"\bgradient name is\b", 'gradient "…" is', text)
    return re.sub(r"\d+", "N", text)


def static_pass(corpus: Path, entry: dict[str, Any], path: Path, result: RewriteResult | None,
                again: RewriteResult | None) -> FileReport:
    """Audit one file of a checkout, and what the rewrite of the checkout (`result`) and its re-run on the
    rewritten checkout (`again`) did to it; no TensorFlow, no user code."""
    report = FileReport(entry["stored_as"], entry["repository"], entry["path"])
    text = path.read_text(encoding="utf-8")
    audited = audit_file(str(path))
    unparsed = [f for f in audited.findings if f.rule == "GC000"]
    if unparsed:
        report.unparsed = unparsed[0].message.splitlines()[0]
        report.legacy_names = legacy_name_count(text)
        return report
    report.audit_sites = sorted((f.rule, f.line) for f in audited.findings if f.rule in RULES)
    if result is None or result.status in ("failed", "skipped"):
        report.rewrite_error = result.reason if result is not None else "the rewrite of the checkout skipped it"
        report.defects = list(report.audit_sites)
        return report
    report.sites = [{**site.as_dict(), "category": category(site.reason) if site.outcome != "rewritten" else ""}
                    for site in result.sites]
    report.changed = result.rewritten != text
    report.rewritten_text = result.rewritten
    report.parses = _parses(result.rewritten)
    report.idempotent = again is not None and again.status not in ("failed", "skipped") and (
        again.rewritten == result.rewritten)
    found = {(PATTERNS[site.pattern], site.line) for site in result.sites}
    report.defects = [site for site in report.audit_sites if site not in found]
    report.extra = sorted(found - set(report.audit_sites))
    return report


def static_passes(corpus: Path, manifest: list[dict[str, Any]]) -> list[FileReport]:
    """`static_pass` of every legacy file, its repository checked out with the context files the manifest has,
    rewritten as a whole, then rewritten again from the rewritten checkout (idempotence)."""
    with tempfile.TemporaryDirectory(prefix="rewrite-real-checkout-") as tmp:
        placed = checkout(corpus, manifest, Path(tmp) / "first")
        first = rewrite_checkouts(placed, Path(tmp) / "first")
        rewritten_root = Path(tmp) / "again"
        again_placed = checkout(corpus, manifest, rewritten_root)
        for stored_as, path in again_placed.items():
            done = first.get(placed[stored_as])
            if done is not None and done.status not in ("failed", "skipped"):
                path.write_text(done.rewritten, encoding="utf-8")
        again = rewrite_checkouts(again_placed, rewritten_root)
        return [static_pass(corpus, e, placed[e["stored_as"]], first.get(placed[e["stored_as"]]),
                            again.get(again_placed[e["stored_as"]])) for e in manifest if is_legacy(e)]


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def own_names(entry: dict[str, Any]) -> set[str]:
    """Module names of the file's own project: its directories, the repository's name, a sibling its stem extends
    (`roi_pooling_op` for `roi_pooling_op_grad.py`): the corpus holds this one file, not its package."""
    parts = entry["path"].split("/")
    owner, name = entry["repository"].split("/")
    names = {p for p in parts[:-1]} | {name.lower().replace("-", "_"), owner.lower()}
    stem = Path(parts[-1]).stem
    names |= {stem[:i] for i in range(1, len(stem)) if stem[i] == "_"}
    return names


def classify_import(raw: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """`ok`, a dependency the file needs that is not here (three kinds, reported apart), or a failure."""
    if raw["status"] in ("ok", "timeout"):
        return raw
    missing = raw.get("missing") or ""
    kind, message = raw.get("type"), raw.get("message", "")
    if kind == "ModuleNotFoundError" and missing:
        top = missing.split(".")[0]
        status = ("failed" if top == "tensorflow" else
                  "own_package_missing" if top in own_names(entry) else "dependency_missing")
    elif kind == "ImportError" and "relative import" in message:
        status = "own_package_missing"
    elif kind == "NotFoundError" and ".so" in message:
        status = "op_library_missing"
    else:
        status = "failed"
    return {**raw, "status": status}


def run_import(side: str, source: str, entry: dict[str, Any], workdir: Path, timeout: float) -> dict[str, Any]:
    """Import `source` (saved under the file's own name) in a child process, as `side` expects TensorFlow."""
    directory = workdir / side / entry["stored_as"].replace("/", "__")
    directory.mkdir(parents=True)
    module = directory / Path(entry["path"]).name
    module.write_text(source, encoding="utf-8")
    out = directory / "result.json"
    env = {**os.environ, "PYTHONPATH": str(_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        subprocess.run([sys.executable, "-c", _CHILD, side, str(module), str(out)], cwd=directory, env=env,
                       capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"no result within {timeout:.0f} s"}
    if not out.is_file():
        return {"status": "failed", "type": "crash", "message": "the child process died before writing a result"}
    return classify_import(json.loads(out.read_text()), entry)


def import_pass(corpus: Path, reports: Sequence[FileReport], entries: dict[str, dict[str, Any]], jobs: int,
                timeout: float) -> None:
    """Each parsed file imported twice, in parallel child processes: the original under tf.compat.v1, the rewrite
    under TF2."""
    todo = [r for r in reports if r.unparsed is None and r.rewrite_error is None]
    with tempfile.TemporaryDirectory(prefix="rewrite-real-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {}
        for report in todo:
            entry = entries[report.stored_as]
            original = (corpus / report.stored_as).read_text(encoding="utf-8")
            for side, source in (("original", original), ("rewritten", report.rewritten_text)):
                futures[pool.submit(run_import, side, source, entry, Path(tmp), timeout)] = (report, side)
        for future in concurrent.futures.as_completed(futures):
            report, side = futures[future]
            report.imports[side] = future.result()
    for report in todo:
        original, rewritten = report.imports.get("original", {}), report.imports.get("rewritten", {})
        if rewritten.get("status") == "failed" and original.get("status") == "failed" and all(
                original.get(k) == rewritten.get(k) for k in ("type", "message")):
            report.imports["rewritten"] = {**rewritten, "status": "fails_as_original"}


def verify_pass(corpus: Path, reports: Sequence[FileReport], timeout: float) -> None:
    """compat.verify on every rewritten file whose original imports here, with the entries it declares or those
    verify infers: `proven`, `not proven` (with the first reason), or `no entries` (none derivable)."""
    for report in reports:
        if not report.changed or report.imports.get("original", {}).get("status") != "ok":
            continue
        try:
            verified = verify_rewrite(str(corpus / report.stored_as), report.rewritten_text, timeout_s=timeout)
        except EntriesError as exc:
            report.verify, report.verify_reason = "no entries", str(exc).splitlines()[0][:300]
            continue
        if not verified.entries:
            report.verify, report.verify_reason = "no entries", "; ".join(verified.not_verified.values())[:300]
            continue
        report.entries = True
        report.verify = "proven" if verified.ok else "not proven"
        if not verified.ok:
            failing = [f"{c.entry}/{c.scenario}/{c.context}: {c.status}: {c.message}" for c in verified.failures]
            report.verify_reason = (failing + list(verified.uncompared())
                                    + [f"{k}: {v}" for k, v in verified.not_verified.items()] + [""])[0][:300]


@dataclasses.dataclass(frozen=True)
class Target:
    """One of issue #23's targets: what was measured and whether it holds."""

    name: str
    measured: str
    met: bool


def totals(reports: Sequence[FileReport], imported: bool) -> dict[str, Any]:
    """Counts over the whole run (plain values, for the text and the JSON report)."""
    parsed = [r for r in reports if r.unparsed is None]
    outcomes = collections.Counter({name: 0 for name in OUTCOMES})
    for report in parsed:
        outcomes.update(report.outcome_counts())
    failed_sites = sum(len(r.audit_sites) for r in parsed if r.rewrite_error)
    sites = sum(len(r.audit_sites) for r in parsed)
    done = sum(outcomes.get(name, 0) for name in DONE)
    unparsed_names = sum(r.legacy_names for r in reports if r.unparsed)
    changed = [r for r in parsed if r.changed]
    return {
        "files": len(reports), "repositories": len({r.repository for r in reports}), "parsed_files": len(parsed),
        "unparsed_files": len(reports) - len(parsed), "unparsed_legacy_names": unparsed_names,
        "sites": sites, "outcomes": dict(outcomes), "rewrite_failed_sites": failed_sites,
        "rate": done / sites if sites else 0.0,
        "rate_counting_unparsed": done / (sites + unparsed_names) if sites + unparsed_names else 0.0,
        "changed_files": len(changed), "changed_files_parsing": sum(bool(r.parses) for r in changed),
        "idempotent_files": sum(bool(r.idempotent) for r in parsed if not r.rewrite_error),
        "rewritten_files_checked": sum(1 for r in parsed if not r.rewrite_error),
        "imports": {side: dict(collections.Counter(r.imports[side]["status"] for r in parsed if side in r.imports))
                    for side in ("original", "rewritten")} if imported else None,
        "files_with_entries": sum(r.entries for r in changed),
        "proven": sum(r.verify == "proven" for r in changed),
        "defects": sum(len(r.defects) for r in reports),
    }


def targets(t: dict[str, Any], imported: bool) -> list[Target]:
    """Issue #23's "done when", each with the figure that decides it."""
    rewritten = t["imports"]["rewritten"] if imported else {}
    import_failures = rewritten.get("failed", 0) + rewritten.get("timeout", 0)
    importable = sum(n for status, n in rewritten.items() if status not in BLOCKED)
    verify_note = (f"{t['proven']} of {t['files_with_entries']} rewritten files with entries (declared or "
                   f"inferred) proven" if t["files_with_entries"] else
                   "no rewritten file whose original imports here has entries compat.verify can declare or infer")
    return [
        Target("corpus >= 40 files from >= 25 repositories", f"{t['files']} files, {t['repositories']} repositories",
               t["files"] >= 40 and t["repositories"] >= 25),
        Target(f"(rewritten + kept) / sites >= {RATE_TARGET:.0%}", f"{t['rate']:.1%} of {t['sites']} sites",
               t["sites"] > 0 and t["rate"] >= RATE_TARGET),
        Target("every rewritten file parses", f"{t['changed_files_parsing']} of {t['changed_files']}",
               t["changed_files_parsing"] == t["changed_files"]),
        Target("every rewritten file imports under TF2 where its dependencies allow",
               f"{importable - import_failures} of {importable}" if imported else "not measured (--noimport)",
               imported and import_failures == 0),
        Target("the rewrite is idempotent", f"{t['idempotent_files']} of {t['rewritten_files_checked']} files",
               t["idempotent_files"] == t["rewritten_files_checked"]),
        Target("every rewrite with derivable entries is proven by compat.verify", verify_note,
               t["files_with_entries"] > 0 and t["proven"] == t["files_with_entries"]),
        Target("no audited site without a rewriter site (defects)", f"{t['defects']} defects", t["defects"] == 0),
    ]


def todo_categories(reports: Iterable[FileReport], entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Sites not rewritten, by normalized reason, most frequent first, each with its first example site."""
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    for report in reports:
        entry = entries[report.stored_as]
        for site in report.sites:
            if site["outcome"] in DONE:
                continue
            key = f"{site['outcome']}: {site['category']}"
            counts[key] += 1
            examples.setdefault(key, f"{entry['repository']}:{entry['path']}:{site['line']}")
    return [{"category": key, "count": n, "example": examples[key]} for key, n in counts.most_common()]


def _import_cell(report: FileReport) -> str:
    if not report.imports:
        return "-"
    short = {"ok": "ok", "dependency_missing": "dep", "own_package_missing": "own", "op_library_missing": "so",
             "fails_as_original": "asv1", "failed": "FAIL", "timeout": "TIME"}
    return "/".join(short[report.imports[side]["status"]] for side in ("original", "rewritten"))


def print_files(reports: Sequence[FileReport]) -> None:
    head = ["sites", *OUTCOMES, "defect", "parse", "idem"]
    widths = [max(5, len(h)) for h in head]
    print(f"{'file':<66} " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)) + " import v1/tf2")
    for r in reports:
        if r.unparsed:
            print(f"{r.stored_as[:66]:<66} unparsed (GC000: {r.unparsed[:60]}); {r.legacy_names} legacy names")
            continue
        counts = r.outcome_counts()
        cells: list[object] = [len(r.audit_sites), *(counts.get(o, 0) for o in OUTCOMES), len(r.defects),
                               "yes" if r.parses else "NO", "yes" if r.idempotent else "NO"]
        if r.rewrite_error:
            print(f"{r.stored_as[:66]:<66} rewrite raised {r.rewrite_error[:80]}")
            continue
        print(f"{r.stored_as[:66]:<66} " + " ".join(f"{c!s:>{w}}" for c, w in zip(cells, widths, strict=True)) +
              f" {_import_cell(r)}" + (f" verify: {r.verify}" if r.verify else ""))
        if r.verify_reason:
            print(f"    verify: {r.verify_reason}")


def print_summary(t: dict[str, Any], found: list[Target], categories: list[dict[str, Any]],
                  reports: Sequence[FileReport]) -> None:
    print(f"\n{t['files']} files from {t['repositories']} repositories; {t['parsed_files']} parsed, "
          f"{t['unparsed_files']} unparsable (GC000) holding {t['unparsed_legacy_names']} legacy names by token count "
          f"(outside the rate; counted as not rewritten the rate would be {t['rate_counting_unparsed']:.1%})")
    outcomes = ", ".join(f"{name} {n}" for name, n in t["outcomes"].items())
    print(f"{t['sites']} sites found by compat-audit (GC001-GC004): {outcomes}; in files the rewriter raised on: "
          f"{t['rewrite_failed_sites']}")
    if t["imports"]:
        for side, label in (("original", "original under tf.compat.v1"), ("rewritten", "rewritten under TF2")):
            print(f"imports, {label}: " + ", ".join(f"{k} {v}" for k, v in sorted(t["imports"][side].items())))
        for r in reports:
            got = r.imports.get("rewritten", {})
            if got.get("status") in ("failed", "timeout"):
                print(f"  import failure {r.stored_as}: {got.get('type', got['status'])}: "
                      f"{got.get('message', '')[:150]} (original under v1: {r.imports['original']['status']})")
    for r in reports:
        for rule, line in r.defects:
            print(f"  defect {r.repository}:{r.path}:{line}: {rule} found by compat-audit, no rewriter site")
    print("\nnot rewritten, by reason (count, example site):")
    for item in categories:
        print(f"  {item['count']:>4}  {item['category']}  [{item['example']}]")
    print("\ntargets:")
    for target in found:
        print(f"  {'met ' if target.met else 'MISS'}  {target.name}: {target.measured}")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", help="glob on the manifest's stored_as, e.g. 'tensorpack__*'; default: all")
    parser.add_argument("--json", help="also write the whole report as JSON to this file")
    parser.add_argument("--noimport", action="store_true", help="skip the child-process imports (no TensorFlow)")
    parser.add_argument("--jobs", type=int, default=usable_cpus(), help="child processes at once (default: CPUs)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per import or verification")
    parser.add_argument("--corpus", default=str(CORPUS), help="the corpus directory (with MANIFEST.json)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs must be at least 1 and --timeout positive")
    return args


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    corpus = Path(args.corpus)
    manifest = load_manifest(corpus, args.files)
    entries = {e["stored_as"]: e for e in manifest if is_legacy(e)}
    started = time.monotonic()
    reports = static_passes(corpus, manifest)
    if not args.noimport:
        import_pass(corpus, reports, entries, args.jobs, args.timeout)
    verify_pass(corpus, reports, args.timeout)
    t = totals(reports, not args.noimport)
    found = targets(t, not args.noimport)
    categories = todo_categories(reports, entries)
    print_files(reports)
    print_summary(t, found, categories, reports)
    code = 0 if all(target.met for target in found) else 1
    print(f"\n{time.monotonic() - started:.1f} s, {load_average()}\nresult: {'PASS' if code == 0 else 'FAIL'}")
    if args.json:
        write_json(Path(args.json), reports, t, found, categories, code)
    return code


def write_json(path: Path, reports: Sequence[FileReport], t: dict[str, Any], found: Sequence[Target],
               categories: list[dict[str, Any]], code: int) -> None:
    files = [{k: v for k, v in dataclasses.asdict(r).items() if k != "rewritten_text"} for r in reports]
    versions = {str(r.imports[s]["tensorflow"]) for r in reports for s in r.imports if "tensorflow" in r.imports[s]}
    document = {"tool": "benchmarks/rewrite_real.py", "tensorflow": sorted(versions), "outcomes": list(OUTCOMES),
                "totals": t, "targets": [dataclasses.asdict(x) for x in found], "todo_categories": categories,
                "files": files, "exit_code": code}
    path.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
