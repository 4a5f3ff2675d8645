"""The audit's pre-filter: does a source name a legacy gradient API outside comments and prose strings?"""

from __future__ import annotations

import re
import sys

# Every per-file rule needs one of these names in the file's code; files without them are never parsed.
TRIGGER_WORDS = ("Defun", "RegisterGradient", "gradient_override_map", "custom_gradient")
# For streaming files too large to decode: any occurrence, even inside a longer name.
TRIGGERS = re.compile("|".join(TRIGGER_WORDS).encode())
LONGEST_TRIGGER = max(map(len, TRIGGER_WORDS))
# The names themselves: `MapDefun` or `my_custom_gradient` is none of these APIs.
_TEXT_TRIGGERS = re.compile(r"\b(?:" + "|".join(TRIGGER_WORDS) + r")\b")

# Comments and string literals, as Python 3.11's tokenizer ends them. Prefixes are not part of the match (the
# f of an f-string is read just before it). A quote that opens no complete string is `unterminated`.
_TOKENS = re.compile(r"""
    (?P<comment>\#[^\r\n]*)
  | (?P<string>
        \"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*\"\"\"
      | '''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''
      | "[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"
      | '[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'
    )
  | (?P<unterminated>["'])
""", re.VERBOSE | re.DOTALL)
# A string the audit reads as a name (`getattr(tf, "custom_gradient")`), unlike prose in a docstring or an op
# name such as "MapDefun".
_NAME_LIKE = re.compile(r"\s*(?:[\w.]*\.)?(?:" + _TEXT_TRIGGERS.pattern + r")\s*")
# From Python 3.12 an f-string may nest its own quote (PEP 701), which this lexer does not follow.
_NESTED_FSTRINGS = sys.version_info >= (3, 12)


def names_legacy_api(text: str) -> bool:
    """Whether `text` may use a legacy gradient API, so that the audit must parse it.

    False when no trigger word appears as a name of its own (`MapDefun` is not `Defun`), or when each lies in a
    comment or in a string that no rule reads: prose such as TensorFlow's generated docstrings ("a function
    decorated with @Defun"). A word in code, in an f-string, or in a string that is a bare name (a `getattr`
    argument) makes it True, and so does anything this lexer cannot follow (an unterminated string: the parser
    then reports the syntax error), so it never hides a finding.
    Checked against Python's own tokenizer in tests/audit/test_prefilter.py.
    """
    if not any(word in text for word in TRIGGER_WORDS):  # substring tests: twice as fast as the regex
        return False
    triggers = [m.span() for m in _TEXT_TRIGGERS.finditer(text)]
    if not triggers:
        return False
    nxt = 0
    for token in _TOKENS.finditer(text):
        start, end = token.span()
        if triggers[nxt][0] < start or token.lastgroup == "unterminated":
            return True  # a trigger in code, or a string this lexer cannot end
        if _NESTED_FSTRINGS and token.lastgroup == "string" and _is_fstring(text, start):
            return True
        while nxt < len(triggers) and triggers[nxt][1] <= end:
            if token.lastgroup == "string" and _read_as_code(text, start, end):
                return True
            nxt += 1
        if nxt == len(triggers):
            return False
        if triggers[nxt][0] < end:
            return True  # a word that starts inside this token and ends outside it
    return True  # the words after the last comment or string are in code


def _is_fstring(text: str, quote: int) -> bool:
    return "f" in text[max(0, quote - 2):quote].lower()


def _read_as_code(text: str, start: int, end: int) -> bool:
    if _is_fstring(text, start):
        return True  # its {fields} are code
    quotes = 3 if text.startswith(('"""', "'''"), start) else 1
    return _NAME_LIKE.fullmatch(text, start + quotes, end - quotes) is not None
