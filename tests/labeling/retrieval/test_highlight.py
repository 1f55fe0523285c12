"""Query-term highlighting, reading anchors and text reflow (labeling.retrieval.highlight,
.reflow)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import Stemmer

from labeling.retrieval.highlight import (
    ANCHOR_WORDS,
    DISPLAY_STOPWORDS,
    mark_html,
    mark_text,
    query_terms,
)
from labeling.retrieval.reflow import paragraphs


def test_query_terms_are_snowball_stems_without_stop_words() -> None:
    want = set(Stemmer.Stemmer("english").stemWords(["solar", "panels", "flat", "roofs"]))
    assert (
        query_terms("Solar panels on the flat ROOFS") == want == {"solar", "panel", "flat", "roof"}
    )
    # Only stop words (labeling.retrieval.text.STOPWORDS): keep them.
    assert query_terms("to be or not to be") == {"to", "be", "or", "not"}


def test_function_words_are_not_highlighted() -> None:
    # A long request in words BM25 keeps (Lucene's stop set is short): only content words mark.
    query = "What has been found out from them now, among the studies of heat transfer?"
    assert query_terms(query) == {"studi", "heat", "transfer", "found"}
    text = "Heat from the wall: what has been known among them now."
    assert re.findall(r"<mark>(.*?)</mark>", mark_text(text, query_terms(query)).markup) == ["Heat"]
    # A query of function words only still highlights something: BM25's terms.
    assert query_terms("what has been") == {"what", "has", "been"}


def test_display_stop_words_hold_nltks_english_list() -> None:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    from labeling.retrieval.text import STOPWORDS

    assert set(STOPWORDS_EN_PLUS) <= DISPLAY_STOPWORDS
    assert STOPWORDS <= DISPLAY_STOPWORDS


def test_highlighting_uses_the_bm25_analyser() -> None:
    from labeling.retrieval.text import term_spans, tokenize

    query = "Roofing of the solar_panel arrays, don't"
    text = "roofs and solar_panel array; don't stop. Roofing: arrays."
    terms = query_terms(query)
    # BM25's terms less the display stop words ("don" of "don't")
    assert terms == frozenset(tokenize(query)) - {"don"}
    want = [text[a:b] for a, b, t in term_spans(text) if t in terms]
    assert re.findall(r"<mark>(.*?)</mark>", mark_text(text, terms).markup) == want


def test_text_marks_inflected_forms_case_insensitively_and_escapes() -> None:
    terms = query_terms("roof panel")
    out = mark_text("Roofing <b>panels</b> & a Roof.", terms).markup
    assert re.findall(r"<mark>(.*?)</mark>", out) == ["Roofing", "panels", "Roof"]
    assert "&lt;b&gt;" in out and "&amp;" in out and "<b>" not in out


def test_anchors_every_n_words_and_at_the_end() -> None:
    words = " ".join(f"w{i}" for i in range(5 * ANCHOR_WORDS + 3))
    marked = mark_text(words, frozenset())
    ids = re.findall(r"<span id=(hj-a\d+)></span>", marked.markup)
    assert ids == [f"hj-a{i}" for i in range(6)] and marked.anchors == 6
    assert marked.markup.endswith("<span id=hj-end></span>")
    # Anchor i sits right before word i * ANCHOR_WORDS.
    assert f"<span id=hj-a2></span> w{2 * ANCHOR_WORDS} " in marked.markup
    assert mark_text("", frozenset()).anchors == 1


class _Events(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag + repr(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _structure(markup: str, drop: set[str]) -> tuple[list[tuple[str, str]], str]:
    p = _Events()
    p.feed(markup)
    p.close()
    events = [e for e in p.events if e[1].split("[")[0] not in drop]
    return events, "".join(p.text)


HOSTILE = (
    '<p title="solar roof">Solar <b>roof</b>&amp;panel&eacute;s</p>'
    "<script>var roof = '<p>solar</p>';</script><style>.roof{color:red}</style>"
    "<textarea>roof</textarea><title>roof</title><svg><text>roof</text></svg>"
    "<!-- roof --><select><option>roof</option></select>"
    '<img src=x onerror="roof()"><a href="javascript:roof()">roofs</a>'
)


def test_html_keeps_every_tag_and_text_and_marks_only_rendered_text() -> None:
    terms = query_terms("solar roof panel")
    out = mark_html(HOSTILE, terms).markup
    # Removing what was inserted gives back the document byte for byte.
    stripped = re.sub(r"<mark>|</mark>|<span id=hj-(?:a\d+|end)></span>", "", out)
    assert stripped == HOSTILE
    marked = re.findall(r"<mark>(.*?)</mark>", out)
    assert marked == ["Solar", "roof", "panel", "roofs"]
    # Nothing inside script, style, textarea, title, svg, comments, options or attributes.
    for raw in (
        "var roof = '<p>solar</p>';",
        ".roof{color:red}",
        "<textarea>roof</textarea>",
        "<title>roof</title>",
        "<text>roof</text>",
        "<!-- roof -->",
        "<option>roof</option>",
        'title="solar roof"',
        'onerror="roof()"',
    ):
        assert raw in out
    events_in, text_in = _structure(HOSTILE, set())
    events_out, text_out = _structure(out, {"mark", "span"})
    assert events_in == events_out and text_in == text_out


def test_reflow_joins_hard_wrapped_lines_and_keeps_paragraphs() -> None:
    text = (
        "experimental investigation of the aerodynamics of a\r\n"
        "wing in a slipstream .\r\n"
        "  an experimental study of a wing in a propeller slipstream was\r\n"
        "made in order to determine the boundary-\r\n"
        "layer effect .\r\n"
        "  the comparative span loading curves, together with\r\n"
        "supporting evidence .\r\n\r\n"
        "A last paragraph\nafter a blank line.\n- item one\n- item two\n"
    )
    title = "experimental investigation of the aerodynamics of a wing in a slipstream ."
    assert paragraphs(text, title) == [
        "an experimental study of a wing in a propeller slipstream was made in order to "
        "determine the boundary-layer effect .",
        "the comparative span loading curves, together with supporting evidence .",
        "A last paragraph after a blank line.",
        "- item one",
        "- item two",
    ]
    # Without the title (or a different one) the first lines stay.
    assert paragraphs(text, "another title")[0].startswith("experimental investigation")
    assert paragraphs("Title\n\nBody", "Title") == ["Body"]
    assert paragraphs("Title words and more\nbody", "Title words") == ["Title words and more body"]


def test_reflow_on_the_real_cranfield_collection(shared_data) -> None:  # type: ignore[no-untyped-def]
    from labeling.sources.smart import load_cranfield

    coll = load_cranfield(shared_data / "cranfield")
    docs = {d.doc_id: d for d in coll.documents}
    d1 = docs["1"]
    paras = paragraphs(d1.text or "", d1.title)
    assert len(paras) == 3
    assert paras[0].startswith("an experimental study of a wing in a propeller slipstream was made")
    assert all("\n" not in p for p in paras)
    # The title is dropped from (almost) every document; count the exceptions honestly.
    kept = sum(
        1
        for d in coll.documents
        if d.text
        and paragraphs(d.text, d.title)
        and paragraphs(d.text, None)[0] == paragraphs(d.text, d.title)[0]
    )
    assert kept < 0.05 * len(coll.documents)
