"""Query-term highlighting and reading anchors for the documents shown to assessors.

A judged document is shown in a sandboxed frame that runs no script, so everything the frame
shows is decided here, on the server, as markup:

* **Highlighting.** Every word of the document whose Snowball (Porter 2) English stem equals the
  stem of a query word is wrapped in ``<mark>``; the comparison ignores case, and query words on
  a short stop list are left out (unless the query has nothing else). Stemming follows M. F.
  Porter, "An algorithm for suffix stripping" (1980), as implemented by PyStemmer.
* **Reading anchors.** An empty ``<span id="hj-a{i}">`` before the first word and then before
  every :data:`ANCHOR_WORDS`-th word, and ``<span id="hj-end">`` at the end. The judging page
  scrolls a frame from the keyboard by navigating it to one of these fragments (a same-document
  navigation: nothing reloads), which is the only way a page can scroll a frame whose content it
  may not touch.

Plain text is escaped, reflowed into paragraphs (:mod:`labeling.reflow`) and marked. HTML is
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
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser

import Stemmer

from labeling.reflow import paragraphs

#: Words between two reading anchors (about two lines of a frame at desktop width).
ANCHOR_WORDS = 24

#: Letters and digits; an apostrophe inside a word (``don't``) keeps it one word.
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

#: Query words that would mark half of any English text.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with you your yours yourself yourselves""".split()  # noqa: SIM905
)

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

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    # PyStemmer objects are not thread-safe: one per thread (the server renders in a pool).
    st = getattr(_local, "stemmer", None)
    if st is None:
        st = _local.stemmer = Stemmer.Stemmer("english")
    return st


def stems(words: Iterable[str]) -> list[str]:
    """Snowball English stems of ``words``, lower-cased first."""
    return list(_stemmer().stemWords([w.lower().replace("’", "'") for w in words]))


def query_terms(query: str) -> frozenset[str]:
    """The stems to highlight for a query text (its words minus stop words)."""
    words = WORD.findall(query)
    kept = [w for w in words if w.lower() not in STOPWORDS] or words
    return frozenset(stems(kept))


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
        for w, st in zip(todo, stems(todo), strict=True):
            self._cache[w] = st in self.terms
        return [self._cache[w] for w in words]

    def run(self, raw: str, *, escape: bool) -> str:
        """One text run with marks and anchors; ``escape`` for plain text (HTML runs are
        already markup and are copied as they are between the insertions)."""
        found = list(WORD.finditer(raw))
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
    (:func:`labeling.reflow.paragraphs`, which also drops a leading copy of ``title``), with
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
