"""Text a submission sent, made safe for each place it is shown.

A submission's exception messages, the reprs of what it returned, its output, the names of its files and what its
adapter declares reach every rendering. Any of them may hold what a rendering cannot carry or must not pass on: a
lone surrogate (``"\\ud800"``: no UTF-8 encoder writes it, so writing it crashes the grader), a terminal's control
and escape codes (ESC[2J clears the screen, a carriage return overwrites a line with a fake score, OSC 52 writes
the clipboard), the characters XML 1.0 forbids, a spreadsheet formula, a Markdown table's pipe. Each rendering
calls its function here, on what it shows and again on the whole document, so no path is left uncovered.

What is taken out stays readable: each character becomes its Python escape (``\\x1b``, ``\\ud800``, ``\\u202e``).
"""

from __future__ import annotations

import contextlib
import html
import json
import re

# C0 controls but tab and newline, DEL, C1 controls; surrogates (a lone one cannot be encoded); the line and
# paragraph separators (``splitlines`` breaks at them); the bidirectional overrides and isolates, which reorder what
# a terminal or a browser shows; the two noncharacters XML 1.0 forbids.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
SURROGATE = re.compile("[\ud800-\udfff]")
SPREADSHEET_FORMULA_STARTS = ("=", "+", "-", "@")


def escaped(char: str) -> str:
    """A character as Python writes it in a string literal: ``\\x1b``, ``\\u202e``, ``\\ud800``."""
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible_text(text: str) -> str:
    """For a terminal and a text file (``NAME.txt``): every control and escape code, carriage return included,
    and every lone surrogate shown as its escape; newlines and tabs kept. Always encodes as UTF-8."""
    return UNSAFE.sub(lambda match: escaped(match.group()), str(text))


def one_line(text: str) -> str:
    """For one line of a terminal or a text file (a name in a progress line, a header): visible text, newlines and
    tabs shown as escapes too, so that no name can start a line of its own (a forged ``score:`` line)."""
    return visible_text(text).replace("\n", "\\n").replace("\t", "\\t")


def html_text(text: str, *, quote: bool = True) -> str:
    """For HTML (and SVG): visible text with ``& < > " '`` escaped."""
    return html.escape(visible_text(text), quote=quote)


def xml_text(text: str) -> str:
    """For XML 1.0 text and attribute values (ElementTree escapes ``& < >`` and quotes itself): visible text, which
    holds none of the characters XML forbids."""
    return visible_text(text)


def csv_cell(value):
    """For a CSV cell: numbers as they are; text visible, and one that a spreadsheet would run as a formula
    (``=``, ``+``, ``-``, ``@`` first) starts with an apostrophe instead."""
    if not isinstance(value, str):
        return value
    text = visible_text(value)
    # a spreadsheet skips leading blanks (a tab, a space) before it reads a formula
    return "'" + text if text.lstrip(" \t").startswith(SPREADSHEET_FORMULA_STARTS) else text


# emphasis, code, links and images, strike-through; not "_" (inside a word it is no emphasis, and names and ids
# are full of it) nor "\\" (paths)
MARKDOWN_SPECIALS = re.compile(r"([`*\[\]~])")


def markdown_cell(value) -> str:
    """For a Markdown table's cell: visible text on one line, its pipes escaped (a pipe would end the cell), ``< >``
    defused (Markdown renders inline HTML), and the characters of emphasis, code and links escaped (a student named
    ``[FULL MARKS](...)`` or ``**101 / 101**`` is shown as typed, not as a link or bold)."""
    text = MARKDOWN_SPECIALS.sub(r"\\\1", " ".join(visible_text(str(value)).split()))
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def json_safe(value):
    """For JSON: the same value with every lone surrogate written as its escape (``\\ud800``), so that the text
    is valid UTF-8 for any reader; everything else kept as sent (JSON escapes control characters itself)."""
    if isinstance(value, str):
        return SURROGATE.sub(lambda match: escaped(match.group()), value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def json_text(value, **dumps) -> str:
    """``json.dumps`` of ``json_safe(value)``."""
    return json.dumps(json_safe(value), **dumps)


def never_fail_to_encode(*streams) -> None:
    """Text streams (stdout, stderr) write what they cannot encode as escapes (``\\ud800``) instead of raising:
    every rendering makes a submission's strings safe, and a print that one missed costs no report."""
    for stream in streams:
        with contextlib.suppress(AttributeError, ValueError):  # not a text file, or closed
            stream.reconfigure(errors="backslashreplace")
