"""Collection guidelines: the admin's Markdown as HTML that is safe to put in a page.

Two maintained libraries, each doing one job: markdown-it-py renders CommonMark with raw HTML
*off* (``<script>`` in the source is shown as text, not passed through), and nh3 (the Ammonia
sanitiser) keeps only an allow-list of tags and attributes of what came out, so a link can
only be http(s) or mailto and every link gets ``rel="noopener noreferrer"``. Either alone
would be enough against the source's HTML; both together mean a parser bug is not an XSS.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

#: Longest guidelines text accepted (characters of Markdown).
MAX_GUIDELINES = 50_000

_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
# No style attributes: the pages' CSP refuses inline styles anyway.
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_guidelines(markdown: str) -> str:
    """The sanitised HTML of ``markdown`` ("" for blank guidelines)."""
    if not markdown.strip():
        return ""
    html = _MARKDOWN.render(markdown)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
