"""Text analysis shared by retrieval and display: HTML to text, tokens, stopwords, stems.

One analyser for the whole project, so that BM25 (:mod:`labeling.retrieval.bm25`) and anything that
shows which query terms a document contains (e.g. highlighting on the judging page) agree on
what a term is (``docs/retrieval.md#tokenisation``):

1. HTML is reduced to its visible text (``<script>``/``<style>`` dropped, entities decoded);
2. the text is lower-cased and cut into tokens by the pattern ``\\b\\w\\w+\\b`` (runs of two or
   more word characters; the default of scikit-learn and bm25s);
3. English stopwords are dropped: Lucene's English stop set (33 words, the list bm25s ships);
4. each token is stemmed with the Snowball English stemmer (PyStemmer, a C binding;
   "Porter2" in M. F. Porter, "Snowball: A language for stemming algorithms", 2001).

Pure: no FastAPI, no SQLAlchemy. PyStemmer's stemmer objects are not thread-safe, so each
thread gets its own.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser

import Stemmer

__all__ = [
    "STOPWORDS",
    "TOKEN_PATTERN",
    "document_text",
    "stem",
    "strip_html",
    "term_spans",
    "tokenize",
    "tokenize_many",
]

#: Tokens: runs of two or more word characters (Unicode-aware).
TOKEN_PATTERN = re.compile(r"\b\w\w+\b")
#: Lucene's English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``; bm25s ships the same
#: 33 words as ``bm25s.tokenization.STOPWORDS_EN``, checked in
#: tests/labeling/retrieval/test_bm25.py).
#: Spelled out here so that tokenising (BM25, highlighting) does not import bm25s, which
#: loads numba and scipy: about 100 MB in every web process.
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with""".split()  # noqa: SIM905
)

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stem(words: Sequence[str]) -> list[str]:
    """Snowball English stems of lower-cased ``words`` (same order)."""
    return list(_stemmer().stemWords(list(words)))


class _VisibleText(HTMLParser):
    _SKIP = frozenset({"script", "style", "head", "title", "noscript", "template"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "pre"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self._SKIP:
            self.skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self.skipping:
            self.skipping -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def strip_html(html: str) -> str:
    """The visible text of an HTML fragment or page (tags removed, entities decoded; the
    content of ``script``, ``style``, ``head`` and similar elements dropped)."""
    parser = _VisibleText()
    parser.feed(html)
    parser.close()
    return re.sub(r"[ \t\r\f\v]+", " ", "".join(parser.parts)).strip()


def document_text(title: str | None, text: str | None = None, html: str | None = None) -> str:
    """What a document is indexed as: its title, then its text (or the visible text of its
    HTML when it has no text)."""
    body = text if text is not None else strip_html(html) if html else ""
    return f"{title or ''}\n{body}".strip()


def _words(text: str) -> list[str]:
    return [w for w in TOKEN_PATTERN.findall(text.lower()) if w not in STOPWORDS]


def tokenize(text: str) -> list[str]:
    """The terms of ``text``: lower-cased tokens without stopwords, stemmed (module doc)."""
    return stem(_words(text))


def tokenize_many(texts: Iterable[str]) -> list[list[str]]:
    """:func:`tokenize` for many texts, stemming all their words in one call (faster)."""
    words = [_words(t) for t in texts]
    flat = stem([w for ws in words for w in ws])
    out: list[list[str]] = []
    pos = 0
    for ws in words:
        out.append(flat[pos : pos + len(ws)])
        pos += len(ws)
    return out


def term_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, term)`` for every non-stopword token of ``text`` (character offsets into
    ``text``), e.g. to highlight in a document the terms of a query: a span matches when its
    ``term`` is in ``set(tokenize(query))``."""
    found = [
        (m.start(), m.end(), m.group(0).lower())
        for m in TOKEN_PATTERN.finditer(text)
        if m.group(0).lower() not in STOPWORDS
    ]
    stems = stem([w for _, _, w in found])
    return [(a, b, s) for (a, b, _), s in zip(found, stems, strict=True)]
