"""Results across TensorFlow releases: per-release `compat-check --format=json` reports merged and rendered.

Pure standard library (no TensorFlow, no numpy), so nox's own interpreter can merge what each release's venv
wrote: `python -m compat.releases reports/check-tf2.12.json reports/check-tf2.21.json --output_dir=reports`.
"""

from compat.releases.merge import MATRIX_SCHEMA_VERSION, load_report, merge, skip_record
from compat.releases.shards import join_run, join_shards

__all__ = ["MATRIX_SCHEMA_VERSION", "join_run", "join_shards", "load_report", "merge", "skip_record"]
