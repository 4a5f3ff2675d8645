"""The audit's pre-filter: does a source name a legacy gradient API outside comments and prose strings?"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

# Every per-file rule needs one of these names in the file's code; files without them are never parsed.
TRIGGER_WORDS = ("Defun", "RegisterGradient", "gradient_override_map", "custom_gradient")
# For streaming files too large to decode: any occurrence, even inside a longer name.
TRIGGERS = re.compile("|".join(TRIGGER_WORDS).encode())
LONGEST_TRIGGER = max(map(len, TRIGGER_WORDS))
# The names themselves: `MapDefun` or `my_custom_gradient` is none of these APIs.
_TEXT_TRIGGERS = re.compile(r"\b(?:" + "|".join(TRIGGER_WORDS) + r")\b")

# Where a comment or a string may start; what may end a one-quote string or a comment.
_STARTS = re.compile(r"[#'\"]")
_ONE_QUOTE_STOPS = {'"': re.compile(r'["\\\r\n]'), "'": re.compile(r"['\\\r\n]")}
_LINE_END = re.compile(r"[\r\n]")
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
    words = _TEXT_TRIGGERS.finditer(text)  # streamed with the tokens: time and memory linear in the file
    word = next(words, None)
    if word is None:
        return False
    for kind, start, end in _comments_and_strings(text):
        if word.start() < start or kind == "unterminated":
            return True  # a trigger in code, or a string this lexer cannot end
        if _NESTED_FSTRINGS and kind == "string" and _is_fstring(text, start):
            return True
        if word.end() <= end:  # one word or more inside this token: the token is judged once
            if kind == "string" and _read_as_code(text, start, end):
                return True
            word = next((w for w in words if w.end() > end), None)
            if word is None:
                return False
        if word.start() < end:
            return True  # a word that starts inside this token and ends outside it
    return True  # the words after the last comment or string are in code


def _comments_and_strings(text: str) -> Iterator[tuple[str, int, int]]:
    """(kind, start, end) of each comment and string literal, as Python 3.11's tokenizer ends them; a string
    prefix is not included (the f of an f-string is read just before it). A string with no end is the last
    token, `unterminated`. Scanned with `str.find` and one-character searches, never backtracking, so adversarial
    input (a 20 MB line of escapes, unclosed triple quotes) stays linear in time and constant in memory."""
    pos = 0
    while start_match := _STARTS.search(text, pos):
        start = start_match.start()
        char = text[start]
        if char == "#":
            line_end = _LINE_END.search(text, start)
            end = line_end.start() if line_end else len(text)
            yield "comment", start, end
        else:
            triple = text.startswith(char * 3, start)
            end = _triple_end(text, start + 3, char * 3) if triple else _one_quote_end(text, start + 1, char)
            if end < 0:
                yield "unterminated", start, len(text)
                return
            yield "string", start, end
        pos = end


def _triple_end(text: str, pos: int, quotes: str) -> int:
    """The end of a triple-quoted string whose body starts at `pos`, or -1."""
    close = text.find(quotes, pos)
    while close >= 0:  # with no closing quotes at all, no escape can make one
        escape = text.find("\\", pos, close)
        if escape < 0:
            return close + 3
        pos = escape + 2  # a backslash escapes the next character, a quote included
        if pos > close:
            close = text.find(quotes, pos)
    return -1


def _one_quote_end(text: str, pos: int, quote: str) -> int:
    """The end of a one-quote string whose body starts at `pos`, or -1 if a line or the text ends first."""
    stops = _ONE_QUOTE_STOPS[quote]
    while stop := stops.search(text, pos):
        char = stop.group()
        if char == quote:
            return stop.end()
        if char != "\\":
            return -1  # a newline: unterminated
        pos = stop.end() + (2 if text.startswith("\r\n", stop.end()) else 1)  # an escape, or a continued line
        if pos > len(text):
            return -1
    return -1


def _is_fstring(text: str, quote: int) -> bool:
    return "f" in text[max(0, quote - 2):quote].lower()


def _read_as_code(text: str, start: int, end: int) -> bool:
    if _is_fstring(text, start):
        return True  # its {fields} are code
    quotes = 3 if text.startswith(('"""', "'''"), start) else 1
    return _NAME_LIKE.fullmatch(text, start + quotes, end - quotes) is not None
