"""Query-term highlighting and reading anchors for the documents shown to assessors.

A judged document is shown in a sandboxed frame that runs no script, so everything the frame
shows is decided here, on the server, as markup:

* **Highlighting.** Words and terms are those of :mod:`labeling.retrieval.text`, the one analyser
  BM25
  uses too (docs/retrieval.md#tokenisation): every token of the document (``TOKEN_PATTERN``,
  two or more word characters) whose Snowball English stem is one of the query's terms is
  wrapped in ``<mark>``. The query's terms are its words less :data:`DISPLAY_STOPWORDS`, a
  longer stop list than BM25's (Lucene's 33 words keep "from", "what", "has", "among", which
  would mark half of every document), stemmed; a query of such words only falls back to
  BM25's terms (:func:`labeling.retrieval.text.tokenize`), then to all its words. Stemming follows
  M. F. Porter, "Snowball: A language for stemming algorithms" (2001), as implemented by
  PyStemmer.
* **Reading anchors.** An empty ``<span id="hj-a{i}">`` before the first word and then before
  every :data:`ANCHOR_WORDS`-th word, and ``<span id="hj-end">`` at the end. The judging page
  scrolls a frame from the keyboard by navigating it to one of these fragments (a same-document
  navigation: nothing reloads), which is the only way a page can scroll a frame whose content it
  may not touch.

Plain text is escaped, reflowed into paragraphs (:mod:`labeling.retrieval.reflow`) and marked. HTML
is
never re-serialised: the stdlib :class:`html.parser.HTMLParser` only locates the text runs, and
marks and anchors are inserted into those runs at word boundaries, so every tag, attribute and
comment reaches the browser byte for byte. Text inside elements whose content is not rendered
as markup (``script``, ``style``, ``title``, ``textarea``, ``template``, ``select``, SVG, MathML
...) is left alone, and nothing is inserted after ``<plaintext>``. The inserted markup uses no
quotes, so even where a browser would parse a run differently it cannot close an attribute.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from labeling.retrieval.reflow import paragraphs
from labeling.retrieval.text import STOPWORDS, TOKEN_PATTERN, stem, tokenize

#: Words never highlighted (unless the query has nothing else): Lucene's stop set, NLTK's
#: English stop list (179 words, as bm25s ships it in ``bm25s.stopwords.STOPWORDS_EN_PLUS``;
#: checked in tests/labeling/test_highlight.py) and common function words both leave out.
#: Display only: BM25 keeps Lucene's set (docs/retrieval.md#tokenisation).
DISPLAY_STOPWORDS: frozenset[str] = STOPWORDS | frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too
    very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
    couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't
    ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
    weren weren't won won't wouldn wouldn't
    among amongst also could may might must shall would upon within without whether however
    therefore thus yet via per onto""".split()  # noqa: SIM905
)

#: Words between two reading anchors (about two lines of a frame at desktop width).
ANCHOR_WORDS = 24

#: Elements whose text is not rendered as ordinary HTML text (raw text, options, foreign
#: content): no marks or anchors inside them.
_SKIP = frozenset(
    {
        "script",
        "style",
        "title",
        "textarea",
        "xmp",
        "iframe",
        "noembed",
        "noframes",
        "template",
        "select",
        "option",
        "optgroup",
        "datalist",
        "svg",
        "math",
        "head",
    }
)

_MARK_OPEN = "<mark>"
_MARK_CLOSE = "</mark>"
_END = "<span id=hj-end></span>"


def query_terms(query: str) -> frozenset[str]:
    """The stems to highlight for a query text: its words less :data:`DISPLAY_STOPWORDS`,
    stemmed; for a query of such words only, :func:`labeling.retrieval.text.tokenize` (the terms
    BM25
    ranks by), or, for a query of Lucene's stop words only, the stems of all its tokens."""
    words = TOKEN_PATTERN.findall(query.lower())
    terms = stem([w for w in words if w not in DISPLAY_STOPWORDS]) or tokenize(query)
    if not terms:
        terms = stem(TOKEN_PATTERN.findall(query.lower()))
    return frozenset(terms)


@dataclass(frozen=True, slots=True)
class Marked:
    """Markup for a frame's body and how many reading anchors (``hj-a0`` ..) it holds."""

    markup: str
    anchors: int


class _Marker:
    """Marks query words and places anchors in a sequence of text runs (shared word count)."""

    def __init__(self, terms: frozenset[str]) -> None:
        self.terms = terms
        self.words = 0
        self.anchors = 0
        self._cache: dict[str, bool] = {}

    def _hit(self, words: list[str]) -> list[bool]:
        if not self.terms:
            return [False] * len(words)
        todo = [w for w in dict.fromkeys(words) if w not in self._cache]
        for w, st in zip(todo, stem([w.lower() for w in todo]), strict=True):
            self._cache[w] = st in self.terms
        return [self._cache[w] for w in words]

    def run(self, raw: str, *, escape: bool) -> str:
        """One text run with marks and anchors; ``escape`` for plain text (HTML runs are
        already markup and are copied as they are between the insertions)."""
        found = list(TOKEN_PATTERN.finditer(raw))
        hits = self._hit([m.group() for m in found])
        out: list[str] = []
        pos = 0
        for m, hit in zip(found, hits, strict=True):
            # The anchor goes before the gap (right after the previous word), so the
            # punctuation and escapes around a word stay together.
            if self.words % ANCHOR_WORDS == 0:
                out.append(f"<span id=hj-a{self.anchors}></span>")
                self.anchors += 1
            gap = raw[pos : m.start()]
            out.append(html.escape(gap, quote=False) if escape else gap)
            self.words += 1
            word = html.escape(m.group(), quote=False) if escape else m.group()
            out.append(_MARK_OPEN + word + _MARK_CLOSE if hit else word)
            pos = m.end()
        tail = raw[pos:]
        out.append(html.escape(tail, quote=False) if escape else tail)
        return "".join(out)

    def finish(self) -> None:
        if self.anchors == 0:  # a document without words still has a top to scroll to
            self.anchors = 1


def mark_text(text: str, terms: frozenset[str], *, title: str | None = None) -> Marked:
    """A plain-text document as ``<div class=hj-text><p>..</p>..</div>``: escaped, reflowed
    (:func:`labeling.retrieval.reflow.paragraphs`, which also drops a leading copy of ``title``),
    with
    query words marked and reading anchors."""
    marker = _Marker(terms)
    paras = paragraphs(text, title)
    body = "".join("<p>" + marker.run(p, escape=True) + "</p>" for p in paras)
    if marker.anchors == 0:
        body = "<span id=hj-a0></span>" + body
    marker.finish()
    return Marked("<div class=hj-text>" + body + "</div>" + _END, marker.anchors)


class _TextRuns(HTMLParser):
    """Collects (start, end) offsets of the text runs of an HTML string that are rendered as
    text. Character references are runs of their own (``convert_charrefs=False``), so a run
    never contains ``&``..``;`` that the insertion could split."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=False)
        self.source = source
        self.line_starts = [0]
        for m in re.finditer("\n", source):
            self.line_starts.append(m.end())
        self.skip: dict[str, int] = {}
        self.stopped = False
        self.runs: list[tuple[int, int]] = []

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "plaintext":
            self.stopped = True
        elif tag in _SKIP:
            self.skip[tag] = self.skip.get(tag, 0) + 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "plaintext":
            self.stopped = True  # "<plaintext/>" is still plaintext to a browser

    def handle_endtag(self, tag: str) -> None:
        if self.skip.get(tag):
            self.skip[tag] -= 1

    def handle_data(self, data: str) -> None:
        if self.stopped or any(self.skip.values()):
            return
        start = self._offset()
        # The parser reports runs at their start; a run must match the source there.
        if self.source.startswith(data, start):
            self.runs.append((start, start + len(data)))


def mark_html(source: str, terms: frozenset[str]) -> Marked:
    """An HTML document with query words marked and reading anchors, tags untouched."""
    parser = _TextRuns(source)
    parser.feed(source)
    parser.close()
    marker = _Marker(terms)
    out: list[str] = []
    pos = 0
    for start, end in parser.runs:
        if start < pos:
            continue
        out.append(source[pos:start])
        out.append(marker.run(source[start:end], escape=False))
        pos = end
    out.append(source[pos:])
    body = "".join(out)
    if marker.anchors == 0:
        body = "<span id=hj-a0></span>" + body
    marker.finish()
    return Marked(body + _END, marker.anchors)
