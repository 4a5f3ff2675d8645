"""The pre-filter skips only files whose trigger words are all in comments or prose strings, never a use."""

from __future__ import annotations

import importlib.util
import io
import random
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest

from compat.audit import audit_paths
from compat.audit.prefilter import names_legacy_api

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="compares with Python 3.11's tokenizer")

_WORDS = re.compile(r"\b(?:Defun|RegisterGradient|gradient_override_map|custom_gradient)\b")
_NAME = re.compile(r"\s*(?:[\w.]*\.)?(?:Defun|RegisterGradient|gradient_override_map|custom_gradient)\s*")


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    """Python's tokens, or None where the C tokenizer would reject the text (tokenize.py reports ERRORTOKEN)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return None if any(t.type == tokenize.ERRORTOKEN for t in tokens) else tokens


def tokenizer_says_uses(text: str) -> bool:
    """The same question answered with Python's tokenizer: a word in code, an f-string or a bare-name string."""
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    tokens = _tokens(text)
    if tokens is None:
        return True
    spans = [(offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1], t)
             for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]
    for word in _WORDS.finditer(text):
        inside = [t for start, end, t in spans if start <= word.start() and word.end() <= end]
        if not inside:
            return True
        if inside[0].type == tokenize.COMMENT:
            continue
        prefix, quote = re.match(r"(?i)([rbuf]*)('''|\"\"\"|'|\")", inside[0].string).groups()
        body = inside[0].string[len(prefix) + len(quote):-len(quote)]
        if "f" in prefix.lower() or _NAME.fullmatch(body):
            return True
    return False


@pytest.mark.parametrize("source, uses", [
    ("x = 1\n", False),
    ("# Defun\nx = 1\n", False),
    ('"""A function decorated with @Defun."""\n', False),
    ("def f():\n    '''Uses tf.custom_gradient, see below.'''\n", False),
    ('op = _apply_op_helper("MapDefun", x)\n', False),  # an op name, not the API
    ("from tensorflow.python.framework.function import Defun\n", True),
    ("from tensorflow.python.ops.gen_dataset_ops import MapDefun\n", False),  # another name
    ("def my_custom_gradient(x): return Defun_v2(x)\n", False),
    ("@tf.custom_gradient\ndef f(x): ...\n", True),
    ('g = getattr(tf, "custom_gradient")\n', True),
    ("g = getattr(tf, ' RegisterGradient ')\n", True),
    ('s = f"{tf.custom_gradient}"\n', True),  # an f-string's fields are code
    ('s = rf"see {Defun}"\n', True),
    ('x = "a\\"" ; Defun\n', True),  # an escaped quote does not end the string
    ('x = r"\\"" ; Defun\n', True),  # nor in a raw string
    ('x = "\\\\" ; Defun\n', True),  # an escaped backslash does
    ('x = "#" ; Defun\n', True),  # a hash inside a string starts no comment
    ("# it's all Defun\nx = 1\n", False),  # a quote inside a comment starts no string
    ('x = """a""""Defun"\n', True),  # the triple quote ends first, then a bare-name string
    ('x = """a\n""" + Defun\n', True),
    ("x = 'a\\\nDefun'\n", False),  # a backslash-newline continues a one-quote string
    ("x = 'Defun\n", True),  # unterminated: the parser must see it and report it
    ('x = """Defun\n', True),
    ('x = "De" "fun"\n', False),
    ("elif'prose Defun'\n", True),  # the letters before a quote may be an f prefix: read as code
    ("x = 1\r\n# Defun\r\ny = 2\r\n", False),
    ("x = 'ok'  # Defun\nDefun\n", True),
])
def test_cases(source: str, uses: bool) -> None:
    assert names_legacy_api(source) is uses


_PIECES = ["x", " ", "(", ")", "=", ".", "\n", "\\\n", "elif", "Defun", "tf.custom_gradient", "RegisterGradient",
           "1", ",", "\t"]
_BODY = ["a", " ", "Defun", "custom_gradient", "#", "'", '"', "\\'", '\\"', "\\\\", "{x}", "\\\n",
         "gradient_override_map"]


def _random_source(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 30)):
        kind = rng.random()
        if kind < 0.5:
            out.append(rng.choice(_PIECES))
        elif kind < 0.65:
            out.append("#" + "".join(rng.choice(_BODY) for _ in range(rng.randint(0, 4))).replace("\n", "") + "\n")
        else:
            quote = rng.choice(["'", '"', "'''", '"""'])
            body = "".join(rng.choice(_BODY + (["\n"] if len(quote) == 3 else [])) for _ in range(rng.randint(0, 5)))
            out.append(rng.choice(["", "r", "b", "f", "rb", "F", "u", "Rb"]) + quote + body + quote)
    return "".join(out)


def test_random_sources_never_skip_what_the_tokenizer_calls_a_use() -> None:
    rng = random.Random(20261203)
    compared = cautious = 0
    for _ in range(4000):
        source = _random_source(rng)
        if _tokens(source) is None:
            continue  # not Python: whichever way the pre-filter goes, the parser reports it or nothing uses it
        compared += 1
        if tokenizer_says_uses(source):
            assert names_legacy_api(source), source
        else:
            cautious += names_legacy_api(source)  # e.g. `elifr'...'`: the r after elif read as a prefix
    assert compared > 1000 and cautious < compared * 0.05


def _trees() -> list[Path]:
    root = Path(__file__).resolve().parents[2]
    trees = [root / part for part in ("compat", "tests", "tools", "benchmarks")]
    spec = importlib.util.find_spec("tensorflow")
    if spec is not None and spec.submodule_search_locations:
        trees.append(Path(list(spec.submodule_search_locations)[0]))
    return trees


def test_real_trees_agree_with_the_tokenizer() -> None:
    """Every file of this repository and of the installed TensorFlow that holds a trigger word."""
    checked = 0
    corpus = Path(__file__).resolve().parents[2] / "tests" / "data" / "real"  # other projects' files, on disk only
    for tree in _trees():
        for path in tree.rglob("*.py"):
            if path.is_relative_to(corpus):
                continue
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            if _WORDS.search(text):
                checked += 1
                assert names_legacy_api(text) == tokenizer_says_uses(text), path
    assert checked >= 50


def test_default_run_reads_prose_files_and_strict_checks_them(tmp_path: Path) -> None:
    (tmp_path / "gen_ops.py").write_text('def map_defun(f):\n    """f: A function decorated with @Defun."""\n')
    (tmp_path / "broken_doc.py").write_text('"""Uses Defun."""\nx = (\n')
    (tmp_path / "module_nonlocal.py").write_text('"""custom_gradient notes."""\nnonlocal x\n')
    (tmp_path / "user.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n"
                                      "    return x, lambda dy: dy\n")
    default = audit_paths([str(tmp_path)], jobs=1)
    assert default.files_scanned == 4 and default.files_parsed == 1
    assert not [f for f in default.findings if f.rule == "GC000"]
    strict = audit_paths([str(tmp_path)], jobs=1, strict=True)
    assert strict.files_parsed == 2
    errors = {Path(f.path).name: f.message for f in strict.findings if f.rule == "GC000"}
    assert set(errors) == {"broken_doc.py", "module_nonlocal.py"}
    assert "syntax error" in errors["broken_doc.py"] and "nonlocal" in errors["module_nonlocal.py"]
    assert [f.rule for f in default.findings] == [f.rule for f in strict.findings if f.rule != "GC000"]


def test_hostile_sources_stay_linear() -> None:
    """Unclosed triple quotes behind escapes once made each later triple quote scan to the end (a 20 MB file would
    run for days); long runs of escapes and words must not backtrack either. A timeout guards against a hang."""
    script = textwrap.dedent('''
        from compat.audit.prefilter import names_legacy_api
        n = 700_000
        assert names_legacy_api('# Defun\\n' + '\\\\"""x"\\n' * n + 'Defun\\n')  # unterminated: parsed
        assert not names_legacy_api('x = "' + 'Defun.' * n + 'Defun x"\\n')  # prose: one judgement per string
        assert not names_legacy_api('"""Defun ' + '\\\\"""' * n + ' """\\n')
        assert not names_legacy_api('"Defun ' + '\\\\\\\\' * n + ' "\\n')
        assert not names_legacy_api('# Defun\\n' + "'a' " * n + '\\n')
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
