"""`python -m compat.releases REPORT.json ... [--output_dir=reports]`: merge per-release reports into matrix.*.

A release may be given as the N shard reports of one run (`compat-check --shard=K/N --format=json`): they are
joined into the run's whole report first (compat.releases.shards), so shards and releases merge together.

argparse, not absl: nox runs this with its own interpreter, where only the standard library is sure to exist.
Every report is checked against compat-check's JSON schema before anything is written, and the three files are
written all or none (a failure leaves the old ones). Exit codes: 0 merged, 2 usage error (a report that is
missing, not a compat-check JSON report or breaks its schema, two reports of one release, shards that do not
make one whole run, an --output_dir that cannot be written), each naming the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compat.apps._flag_text import flag_message
from compat.releases import html, markdown
from compat.releases.merge import distinct_releases, load_report, merge
from compat.releases.output import OutputDirError, write_all
from compat.releases.shards import join_shards


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.releases", description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="compat-check --format=json reports, one per release (or all "
                        "the --shard=K/N reports of a release), in order")
    parser.add_argument("--output_dir", default="reports", help="where matrix.json, .md and .html are written")
    args = parser.parse_args(argv)
    try:
        joined = join_shards([(path, load_report(path)) for path in args.reports])
        reports = [report for _, report in joined]
        distinct_releases([path for path, _ in joined], reports)
    except ValueError as exc:
        parser.error(flag_message(exc))
    matrix = merge(reports)
    files = {"matrix.json": json.dumps(matrix, indent=2, ensure_ascii=False) + "\n",
             "matrix.md": markdown.render(matrix), "matrix.html": html.render(matrix)}
    try:
        write_all(args.output_dir, files)
    except OutputDirError as exc:
        parser.error(f"--output_dir={exc.path}: {exc.reason}")
    out = Path(args.output_dir)
    summary = matrix["summary"]
    print(f"{summary['releases_ran']} releases ran, {summary['releases_skipped']} skipped; {summary['changed']} of "
          f"{summary['rows']} cells change: {out / 'matrix.md'}, {out / 'matrix.html'}, {out / 'matrix.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
