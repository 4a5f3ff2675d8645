"""Regenerate everything in migration_guide.md that says what TensorFlow does, from running it (never typed in).

    python tools/gen_migration_guide.py                               # rewrite the guide in place
    python tools/gen_migration_guide.py --matrix=reports/matrix.json  # ... and the releases it was checked on
    python tools/gen_migration_guide.py --check                       # exit 1 if the guide differs from a run

Generated text sits between `<!-- generated: NAME -->` and `<!-- /generated -->` (NAME in GENERATORS, or
`releases`, written only from a `nox -s matrix` report). Every ```python block is run in a fresh interpreter and
followed by its output between `<!-- output -->` and `<!-- /output -->`; `<!-- block: NAME -->` above a block
names it for the sentences that read its output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "migration_guide.md"
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

_GENERATED = re.compile(r"(<!-- generated: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.DOTALL)
_BLOCK = re.compile(r"(?:<!-- block: (?P<name>[a-z0-9_]+) -->\n)?```python\n(?P<code>.*?)```\n"
                    r"(?:\n<!-- output -->\n.*?<!-- /output -->\n)?", re.DOTALL)
_WIDTH = 120
_NUMBERS = re.compile(r"\[([-0-9., ]+)\]")


def blocks(text: str) -> list[tuple[str | None, str]]:
    """(name or None, code) of every ```python block, in order."""
    return [(m["name"], m["code"]) for m in _BLOCK.finditer(text)]


def _with_outputs(text: str, outputs: list[str]) -> str:
    found = iter(outputs)

    def replace(match: re.Match[str]) -> str:
        head = f"<!-- block: {match['name']} -->\n" if match["name"] else ""
        output = f"<!-- output -->\n```text\n{next(found)}\n```\n<!-- /output -->\n"
        return f"{head}```python\n{match['code']}```\n\n{output}"

    return _BLOCK.sub(replace, text)


def _numbers(line: str) -> list[float]:
    found = _NUMBERS.findall(line)
    return [float(v) for v in re.split(r"[ ,]+", found[-1].strip()) if v] if found else []


def seed_verdict(codes: dict[str, str], outputs: dict[str, str]) -> str:
    """What the copied example does in TF2, read from its two runs and compared with its own comments."""
    error = outputs["seed"].splitlines()[-1].split("... ", 1)[-1]
    final = "最终梯度"  # "final gradient", in the example's prints and comments
    printed = [line for line in outputs["seed_fixed"].splitlines() if final in line]
    claimed = [line.split("#", 1)[1] for line in codes["seed_fixed"].splitlines() if final in line and "#" in line]
    pairs = list(zip(printed, claimed, strict=False))  # a print without a claiming comment is left out
    ratios = {round(a / c, 6) for p, cl in pairs for a, c in zip(_numbers(p), _numbers(cl), strict=False) if c}
    called = "上游梯度值" in outputs["seed_fixed"]
    ratio = f"{next(iter(ratios)):g} times" if len(ratios) == 1 else "not"
    facts = "; ".join(f"`{_numbers(p)}` where the comment claims `{_numbers(c)}`" for p, c in pairs)
    verdict = ("is **never called** (its print never appears): the override is silently ignored under "
               "`tf.GradientTape`" if not called else "is called: the override is honoured")
    return (f"As written it fails in TF2 before any gradient is computed: `{error}`. With the fix it runs, and the "
            f"gradient function {verdict}, and the gradients are {ratio} what the comments claim ({facts}).")


def tape_over_function_verdict(codes: dict[str, str], outputs: dict[str, str]) -> str:
    lines = dict(line.split(":", 1) for line in outputs["tape_over_function"].splitlines() if ":" in line)
    inside, eager = _numbers(lines["tape over a tf.function"]), _numbers(lines["eager tape"])
    honoured = inside and all(v == 0.5 for v in inside)
    ignored = eager and all(v == 1.0 for v in eager)
    return (f"The tape over the `tf.function` gives `{inside}`: the override is "
            f"{'honoured' if honoured else 'not honoured'}; entered eagerly it gives `{eager}`: "
            f"{'ignored' if ignored else 'honoured'}. So the override is not ignored under *any* tape: it depends on "
            "where the map is entered, which is why `tf.custom_gradient` is the safe rewrite.")


def _report_generators() -> dict[str, Callable[[], str]]:
    from compat.scenarios import SCENARIOS
    from tools.guide import contexts, facts, forward, modes, tables
    from tools.guide.run import guide_report

    def scenarios() -> str:
        used = {c.scenario for c in guide_report().cells if c.spec == "ste"}
        return "\n".join(f"- `{s.name}`: {s.description}" for s in SCENARIOS.values() if s.name in used)

    from tools.guide import distributed

    report = guide_report
    return {
        "distributed_summary": lambda: distributed.summary(distributed.distributed_report()),
        "distributed_replicas": lambda: distributed.replica_upstreams(distributed.distributed_report()),
        "distributed_reduced": lambda: distributed.reduced_verdicts(distributed.distributed_report()),
        "always_ones": lambda: facts.always_ones(report()),
        "modes_ones": lambda: modes.jacobians_and_forward_mode(modes.modes_report()),
        "upstream_values": lambda: tables.upstream_values(report()),
        "scenarios": scenarios,
        "override_contexts": lambda: facts.override_contexts(report()),
        "defun_limits": lambda: facts.defun_limits(report()),
        "unused_outputs": lambda: facts.unused_outputs(report()),
        "output_upstreams": lambda: tables.output_upstreams(report()),
        "contexts_table": lambda: contexts.contexts_table(report()),
        "forward_table": lambda: forward.forward_table(report()),
        "forward_facts": lambda: forward.forward_facts(report()),
        "contexts_facts": lambda: contexts.contexts_facts(report()),
        **{f"table_{m}": (lambda m=m: tables.mechanism_contexts(report(), m)) for m in tables.MECHANISMS},
    }


BLOCK_GENERATORS: dict[str, Callable[[dict[str, str], dict[str, str]], str]] = {
    "seed_verdict": seed_verdict,
    "tape_over_function_verdict": tape_over_function_verdict,
}


def releases_text(matrix_path: Path) -> str:
    """The releases the guide was checked on, from a `nox -s matrix` report."""
    matrix = json.loads(matrix_path.read_text(encoding="utf-8"))
    ran = [f"{r['release']} ({r['tensorflow']})" for r in matrix["releases"] if r["status"] == "ran"]
    skipped = [f"{r['release']} ({r['reason']})" for r in matrix["releases"] if r["status"] == "skipped"]
    summary = matrix["summary"]
    changed = ", ".join(f"`{s}`" for s in summary["changed_specs"]) or "none"
    return (f"Checked on TensorFlow {', '.join(ran)} (the releases in the `nox -s matrix` report; "
            f"`tests/test_migration_guide.py` regenerates this guide on the installed release and passes only if "
            f"every fact holds there). Between those releases {summary['changed']} of {summary['rows']} catalogue "
            f"cells change (specs: {changed}; see `reports/matrix.md`)."
            f"{' Skipped: ' + '; '.join(skipped) + '.' if skipped else ''}")


def _wrapped(text: str) -> str:
    """Paragraphs filled to the guide's 120 columns; tables and lists are left as they are."""
    if text.startswith(("|", "- ")):
        return text + "\n"
    return textwrap.fill(text, width=_WIDTH, break_long_words=False, break_on_hyphens=False) + "\n"


def regenerate(text: str, matrix: Path | None = None) -> str:
    """The guide with every generated part recomputed; `releases` is kept unless `matrix` is given."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from compat.distribute import use_logical_cpus
    from tools.guide.blocks import run_blocks

    use_logical_cpus()  # the distributed section's MirroredStrategy; before this process runs any op

    found = blocks(text)
    runs = run_blocks([code for _, code in found])
    outputs = [run.text() for run in runs]
    text = _with_outputs(text, outputs)
    named_codes = {name: code for name, code in found if name}
    named_outputs = {name: out for (name, _), out in zip(found, outputs, strict=True) if name}
    generators = _report_generators()

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name == "releases":
            body = _wrapped(releases_text(matrix)) if matrix else match["body"]
        elif name in BLOCK_GENERATORS:
            body = _wrapped(BLOCK_GENERATORS[name](named_codes, named_outputs))
        elif name in generators:
            body = _wrapped(generators[name]())
        else:
            raise ValueError(f"migration_guide.md: unknown generated section {name!r}; use one of "
                             f"{sorted([*generators, *BLOCK_GENERATORS, 'releases'])}")
        return f"{match.group(1)}{body}{match.group(4)}"

    return _GENERATED.sub(replace, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the guide differs from a fresh run")
    parser.add_argument("--matrix", type=Path, help="reports/matrix.json from `nox -s matrix`: the releases line")
    args = parser.parse_args()
    text = GUIDE.read_text(encoding="utf-8")
    fresh = regenerate(text, args.matrix)
    if args.check:
        if fresh != text:
            sys.stderr.write("migration_guide.md differs from a fresh run; run tools/gen_migration_guide.py\n")
            return 1
        return 0
    GUIDE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
