"""`.ci/run` tests the oldest release in TF_VERSIONS with the pins noxfile.py installs for it."""

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _noxfile_values():
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    values = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(
            node, ast.Assign) else None)
        if getattr(target, "id", None) in ("TF_VERSIONS", "EXTRA_PINS"):
            values[target.id] = node.value
    return values


def test_ci_runs_the_oldest_release_with_noxfiles_pins():
    values = _noxfile_values()
    oldest = ast.literal_eval(values["TF_VERSIONS"])[0]
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pins = re.search(r'^OLDEST_PINS="([^"]*)"', script, re.MULTILINE)[1].split()
    # EXTRA_PINS is a dict display ({**{v: [...] for v in (...)}}): evaluate it alone, it has no free names.
    extra_pins = eval(compile(ast.Expression(values["EXTRA_PINS"]), "noxfile.py", "eval"), {})  # noqa: S307
    assert pins == extra_pins.get(oldest, []), f"OLDEST_PINS in .ci/run must be EXTRA_PINS[{oldest!r}]"
    found = subprocess.run(["bash", "-c", re.search(r'^OLDEST="\$\((.*?)\)"$', script, re.MULTILINE | re.DOTALL)[1]],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert found == oldest


def test_ci_script_is_valid_bash_and_strict():
    script = ROOT / ".ci" / "run"
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert "set -euo pipefail" in script.read_text(encoding="utf-8")
