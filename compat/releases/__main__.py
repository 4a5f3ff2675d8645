"""`python -m compat.releases REPORT.json ... [--output_dir=reports]`: merge per-release reports into matrix.*.

argparse, not absl: nox runs this with its own interpreter, where only the standard library is sure to exist.
Exit codes: 0 merged, 2 usage error (a report that is missing or not a compat-check JSON report).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compat.releases import html, markdown
from compat.releases.merge import load_report, merge


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.releases", description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="compat-check --format=json reports, one per release, in order")
    parser.add_argument("--output_dir", default="reports", help="where matrix.json, .md and .html are written")
    args = parser.parse_args(argv)
    try:
        reports = [load_report(path) for path in args.reports]
    except ValueError as exc:
        parser.error(str(exc))
    matrix = merge(reports)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.json").write_text(json.dumps(matrix, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "matrix.md").write_text(markdown.render(matrix), encoding="utf-8")
    (out / "matrix.html").write_text(html.render(matrix), encoding="utf-8")
    summary = matrix["summary"]
    print(f"{summary['releases_ran']} releases ran, {summary['releases_skipped']} skipped; {summary['changed']} of "
          f"{summary['rows']} cells change: {out / 'matrix.md'}, {out / 'matrix.html'}, {out / 'matrix.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
