"""Python source newer than the interpreter running the tool, lowered so that its ``ast`` reads it.

The tool runs on Python 3.11 (README); libraries that require 3.12 write its syntax, Python
3.11's parser refuses the whole file, and an unread file keeps the gate from a verdict
(Fast-LLM: 85 files; jax-triton's ``triton_lib.py``). Two 3.12 forms are lowered, each keeping
every other token on its own line and column (a finding's ``file:line:col`` stays the file's):

- PEP 701: an f-string whose replacement field nests a string in the f-string's own quote
  (``f"ranks_{"_".join(r)}"``): the nested string's quotes become the other quote
  (``'_'``), the same width; one holding a backslash (3.11 refuses one inside a field:
  ``"\\n".join(e)``) has its text blanked (the scan reads that a string is there, not its
  value); where its text holds the other quote too, nothing is lowered.
- PEP 695 type parameters, which only name types for checkers (nothing a kernel or its
  launch does depends on them): ``def f[T, **P](...)`` and ``class C[T: X = Y](...)`` lose
  the bracket group (blanked); ``type Alias[T] = value`` becomes ``Alias = value``, the name
  on ``type``'s column.

Anything else newer (3.14's unparenthesized ``except A, B:``, an f-string nested in its own
quote inside another) is not lowered: the file stays unread, named, as before.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize

# The first release whose own parser reads type parameters: on it nothing is lowered.
_NATIVE = (3, 12)


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, and on a SyntaxError the source with its 3.12 syntax lowered; the first
    error stands when the lowered source does not parse either."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as first:
        if sys.version_info >= _NATIVE:
            raise
        quoted = swap_nested_quotes(source) or source
        lowered = lower_type_params(quoted) or quoted
        if lowered == source:
            raise
        try:
            return ast.parse(lowered, filename=filename)
        except SyntaxError:
            raise first from None


def lower_type_params(source: str) -> str | None:
    """``source`` with PEP 695 type parameter lists and ``type`` statements lowered to 3.11
    syntax, or None when it has none (or does not tokenize)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = source.splitlines(keepends=True)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end, text)
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or i + 2 >= len(tokens):
            continue
        name, after = tokens[i + 1], tokens[i + 2]
        if name.type != tokenize.NAME:
            continue
        if tok.string in ("def", "class") and after.string == "[":
            close = _closing(tokens, i + 2)
            if close is None:
                return None
            edits.append((after.start, tokens[close].end, ""))
        elif tok.string == "type" and _starts_statement(tokens, i):
            last = _closing(tokens, i + 2) if after.string == "[" else i + 1
            if last is None or tokens[last + 1].string != "=":
                continue  # `type` as a plain name: `type(x)`, `type = 3`, `type.mro()`
            # `type Alias[T] = v` -> `Alias          = v`: the name on type's column
            edits.append((tok.start, tokens[last].end, name.string))
    if not edits:
        return None
    return _apply(lines, edits)


def _starts_statement(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    before = tokens[i - 1].type if i else tokenize.NEWLINE
    return before in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT) or (
        tokens[i - 1].string == ";"
    )


def _closing(tokens: list[tokenize.TokenInfo], open_at: int) -> int | None:
    """The index of the ``]`` that closes the ``[`` at ``open_at``."""
    depth = 0
    for j in range(open_at, len(tokens)):
        s = tokens[j].string
        if tokens[j].type == tokenize.OP and s in "([{":
            depth += 1
        elif tokens[j].type == tokenize.OP and s in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return None


def _apply(lines: list[str], edits: list[tuple[tuple[int, int], tuple[int, int], str]]) -> str:
    """Each span replaced by its text padded with blanks to the span's width on its first line;
    the span's later lines blanked and joined by backslash continuations (line numbers kept)."""
    for (r0, c0), (r1, c1), text in sorted(edits, reverse=True):
        first = lines[r0 - 1]
        if r0 == r1:
            width = c1 - c0
            lines[r0 - 1] = first[:c0] + text.ljust(width) + first[c1:]
            continue
        lines[r0 - 1] = first[:c0] + text.ljust(len(first.rstrip("\r\n")) - c0) + " \\\n"
        for r in range(r0 + 1, r1):
            lines[r - 1] = " \\\n"
        last = lines[r1 - 1]
        lines[r1 - 1] = " " * c1 + last[c1:]
    return "".join(lines)


_PREFIX = frozenset("rRbBfFuU")
_QUOTES = "\"'"


def swap_nested_quotes(source: str) -> str | None:
    """``source`` with the strings nested in f-strings' replacement fields made 3.11's (the
    same width: ``_lower_nested``), or None when none needs it or one cannot be."""
    out = list(source)
    swapped = False
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "#":
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif c in _QUOTES:
            prefix = _prefix_before(source, i)
            quote = source[i : i + 3] if source[i : i + 3] in ('"""', "'''") else c
            if "f" in prefix.lower():
                closed = _fstring_end(source, i, quote, "r" in prefix.lower(), out)
                if closed is None:
                    return None
                swapped = swapped or out[i:closed] != list(source[i:closed])
                i = closed
            else:
                i = _string_end(source, i, quote)
        else:
            i += 1
    return "".join(out) if swapped else None


def _prefix_before(source: str, i: int) -> str:
    """The string prefix (``f``, ``rb``, ``Rf``...) just before the quote at ``i``; "" when
    the letters there end a longer name (``elif"x"`` is not a prefix)."""
    j = i
    while j > 0 and source[j - 1] in _PREFIX and i - j < 2:
        j -= 1
    if j > 0 and (source[j - 1].isalnum() or source[j - 1] == "_"):
        return ""
    return source[j:i]


def _string_end(source: str, i: int, quote: str) -> int:
    """The index just past the plain string opening with ``quote`` at ``i`` (a backslash
    keeps the next character in, raw or not, as Python's tokenizer does)."""
    j = i + len(quote)
    while j < len(source):
        if source[j] == "\\":
            j += 2
        elif source.startswith(quote, j):
            return j + len(quote)
        else:
            j += 1
    return len(source)


def _fstring_end(source: str, i: int, quote: str, raw: bool, out: list[str]) -> int | None:
    """The index just past the f-string opening with ``quote`` at ``i``, writing into ``out``
    the strings its replacement fields nest, made 3.11's (``_lower_nested``); None when one
    cannot be, or the f-string does not end."""
    j, depth = i + len(quote), 0
    while j < len(source):
        c = source[j]
        if depth == 0:
            if source.startswith(quote, j):
                return j + len(quote)
            if (c == "\\" and not (raw and source.startswith("{", j + 1))) or (
                source.startswith("{{", j)
            ):
                j += 2  # an escape (a quote it holds does not end the string), or a literal {
            else:
                depth += c == "{"
                j += 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c in _QUOTES:
            prefix = _prefix_before(source, j)
            inner = source[j : j + 3] if source[j : j + 3] in ('"""', "'''") else c
            fstring = "f" in prefix.lower()
            if fstring:
                end = _fstring_end(source, j, inner, "r" in prefix.lower(), out)
            else:
                end = _string_end(source, j, inner)
            if end is None or not _lower_nested(source, (j, end), inner, quote, out, fstring):
                return None
            j = end
            continue
        j += 1
    return None


def _lower_nested(
    source: str, span: tuple[int, int], quote: str, outer: str, out: list[str], fstring: bool
) -> bool:
    """The string at ``span`` (quoted by ``quote``), nested in a field of an f-string quoted
    by ``outer``, made 3.11's in ``out``: a backslash in its text blanks the text (what the
    scan reads of it is that it is a string, not its value); in ``outer``'s quote it takes the
    other quote. False when it cannot be: a nested f-string holding a backslash, or, in the
    outer quote, a triple-quoted string or one whose text holds the other quote."""
    start, end = span
    body = range(start + len(quote), end - len(quote))
    text = source[body.start : body.stop]
    if "\\" in text:
        if fstring:
            return False
        for k in body:
            out[k] = source[k] if source[k] == "\n" else " "
        text = ""
    if quote[0] != outer[0]:
        return True
    other = "'" if quote[0] == '"' else '"'
    if other in text or len(quote) == 3:
        return False
    out[start] = out[end - 1] = other
    return True
