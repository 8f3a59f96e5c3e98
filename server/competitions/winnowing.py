"""Winnowing fingerprints of Python source (Schleimer, Wilkerson and Aiken, SIGMOD 2003,
the method behind MOSS), over tokens normalized so that renaming, reformatting and
comments do not change them; pure functions, no database.

Invariant: two sources whose normalized token streams share a run of at least
``WINDOW + K - 1`` tokens share at least one fingerprint, and a fingerprint is kept only
for runs of ``K`` tokens (shorter matches are noise). Normalizing: a name is ``V`` unless
it is a keyword or an attribute (after a dot: the libraries' API, ``tl.load``, which a
copier rarely renames), a number ``N``, a short string ``S``; the inside of a long string
(a CUDA source given to ``load_inline``) is read the same way, as C-like tokens; comments,
blank lines and indentation are left out. Source that does not tokenize is read as C-like
tokens throughout.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Iterator, Sequence

K = 8  # tokens in a fingerprinted run
WINDOW = 4  # runs in each window; one fingerprint kept per window
# A string at least this long is read as code (a CUDA or C++ source), not as one literal.
CODE_STRING = 40

# fmt: off
C_KEYWORDS = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "__global__", "__device__", "__shared__",
    "__syncthreads", "__restrict__", "template", "typename", "threadIdx", "blockIdx",
    "blockDim", "gridDim",
))
# fmt: on
C_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\"(?:\\.|[^\"\\])*\"|//[^\n]*|/\*.*?\*/|\S", re.S)
SKIPPED = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)


def tokens(source: str) -> list[str]:
    """The source's normalized tokens."""
    try:
        return list(python_tokens(source))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return list(c_tokens(source))


def python_tokens(source: str) -> Iterator[str]:
    previous = ""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in SKIPPED:
            continue
        text = token.string
        if token.type == tokenize.NAME:
            yield text if keyword.iskeyword(text) or previous == "." else "V"
        elif token.type == tokenize.NUMBER:
            yield "N"
        elif token.type == tokenize.STRING:
            body = string_body(text)
            if len(body) >= CODE_STRING:
                yield from c_tokens(body)
            else:
                yield "S"
        else:
            yield text
        previous = text


def string_body(literal: str) -> str:
    """A string literal's text without its prefix and quotes (escapes as written)."""
    start = min(i for i in (literal.find("'"), literal.find('"')) if i >= 0)
    quote = literal[start] * 3 if literal[start : start + 3] in ('"""', "'''") else literal[start]
    return literal[start + len(quote) : len(literal) - len(quote)]


def c_tokens(source: str) -> Iterator[str]:
    previous = ""
    for match in C_TOKEN.finditer(source):
        text = match.group()
        if text.startswith(("//", "/*")):
            continue
        if text[0].isalpha() or text[0] == "_":
            yield text if text in C_KEYWORDS or previous in (".", "->") else "V"
        elif text[0].isdigit():
            yield "N"
        elif text[0] == '"':
            yield "S"
        else:
            yield text
        previous = text


def run_hash(run: Sequence[str]) -> int:
    digest = hashlib.blake2b("\x1f".join(run).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def fingerprints(source: str) -> frozenset[int]:
    """The source's winnowed fingerprints: of each window of ``WINDOW`` consecutive run
    hashes, the smallest. A source shorter than one run is one
    fingerprint, of all its tokens; an empty one has none."""
    found = tokens(source)
    if not found:
        return frozenset()
    if len(found) < K:
        return frozenset({run_hash(found)})
    hashes = [run_hash(found[i : i + K]) for i in range(len(found) - K + 1)]
    if len(hashes) <= WINDOW:
        return frozenset({min(hashes)})
    kept = set()
    for start in range(len(hashes) - WINDOW + 1):
        window = hashes[start : start + WINDOW]
        smallest = min(window)
        kept.add(smallest)
    return frozenset(kept)


def similarity(first: frozenset[int], second: frozenset[int]) -> float:
    """The Jaccard similarity of two fingerprint sets (0 when both are empty)."""
    union = len(first | second)
    return len(first & second) / union if union else 0.0
