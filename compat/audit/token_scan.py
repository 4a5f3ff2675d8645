"""Legacy sites in a file that does not parse (Python 2 code, a syntax error): found in its code text, no AST.

The audit cannot resolve names without a syntax tree, so this scan only recognises the APIs by name, as they are
spelled in calls: `gradient_override_map(`, `RegisterGradient(`, `Defun(` with a `grad_func=` or
`python_grad_func=` keyword. Comments and strings are skipped with the pre-filter's lexer, which reads Python 2
strings too. It is enough to say that such a file holds legacy gradients, where, and that it must be ported first.
"""

from __future__ import annotations

import dataclasses
import re

from compat.audit.prefilter import _comments_and_strings

_CALLS = re.compile(r"\b(gradient_override_map|RegisterGradient|Defun)\s*\(")
_DEFUN_GRADIENT = re.compile(r"\b(python_grad_func|grad_func)\s*=(?!=)")
_RULES = {"gradient_override_map": "GC004", "RegisterGradient": "GC003",
          "grad_func": "GC001", "python_grad_func": "GC002"}


@dataclasses.dataclass(frozen=True)
class TokenSite:
    """A legacy API call found in the code text: its rule, 1-based line and column, and the API's name."""

    rule: str
    line: int
    col: int
    api: str


def legacy_sites(text: str) -> list[TokenSite]:
    """Every legacy gradient API call in the code of `text` (comments and strings blanked), in order."""
    code = _blank_comments_and_strings(text)
    sites = []
    for call in _CALLS.finditer(code):
        api = call.group(1)
        if api == "Defun":
            arguments = code[call.end():_closing_paren(code, call.end())]
            keyword = _DEFUN_GRADIENT.search(arguments)
            if keyword is None:
                continue
            api = keyword.group(1)
        line = code.count("\n", 0, call.start()) + 1
        col = call.start() - (code.rfind("\n", 0, call.start()) + 1) + 1
        sites.append(TokenSite(_RULES[api], line, col, api))
    return sites


def _blank_comments_and_strings(text: str) -> str:
    """`text` with every comment and string replaced by spaces, newlines kept (so positions stay the same)."""
    pieces, pos = [], 0
    for _, start, end in _comments_and_strings(text):
        pieces.append(text[pos:start])
        pieces.append(re.sub(r"[^\n]", " ", text[start:end]))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def _closing_paren(code: str, pos: int) -> int:
    """The index of the parenthesis closing the call whose arguments start at `pos` (or the end of `code`)."""
    depth = 1
    for match in re.finditer(r"[()]", code[pos:]):
        depth += 1 if match.group() == "(" else -1
        if depth == 0:
            return pos + match.start()
    return len(code)


def describe(sites: list[TokenSite]) -> str:
    """"3 legacy gradient sites (line 12 RegisterGradient, ...)" for a GC000 message, or "" when there are none."""
    if not sites:
        return ""
    shown = ", ".join(f"line {site.line} {site.api}" for site in sites[:6]) + (", ..." if len(sites) > 6 else "")
    return f"{len(sites)} legacy gradient site{'s' * (len(sites) != 1)} ({shown})"
