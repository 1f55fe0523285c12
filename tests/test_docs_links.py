"""Every relative link of README.md and docs/*.md leads somewhere, and so does every
``docs/<page>.md#<anchor>`` the code cites.

A link's file must exist; its ``#anchor`` must be one GitHub makes for that page: a heading's
slug (the heading's text lowercased, every character but letters, digits, ``-`` and ``_``
dropped, each space turned into ``-``; a repeated slug gets ``-1``, ``-2``, ...) or an HTML
``<a id="...">``. A ``{#id}`` written after a heading is no anchor on GitHub (it shows as text),
so it is refused outright. Headings inside fenced code blocks are not headings.

The citations are read from the project's source and templates (``app``, ``labeling``,
``ranking``, ``benchmarks``, ``templates``, ``migrations``, ``tests``) and from the pages'
plain text (README.md and docs/, where ``docs/<page>.md#<anchor>`` is often written outside a
link). Each checker is run on a small bad tree too, so a checker that sees nothing cannot pass.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The docs folder's name, spelled apart in the known-bad samples below so that no tool reading
#: this file for citations takes them for the project's own.
D = "docs"
CITING = ("app", "labeling", "ranking", "benchmarks", "templates", "migrations", "tests")
CITING_SUFFIXES = {".py", ".html", ".js", ".css", ".md", ".toml", ".txt", ".ini", ".cfg"}

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
EXPLICIT_ID = re.compile(r"\{#[^}]*\}\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(].*?)?\s*\)"
)
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
LINE_ANCHOR = re.compile(r"^L\d+(?:-L\d+)?$")
#: ``docs/<page>.md`` or ``docs/<page>.md#<anchor>`` in any text; the lookbehind keeps
#: ``src/docs/...`` out.
CITATION = re.compile(r"(?<![\w/.-])docs/([\w./-]+?\.md)(?:#([\w-]+))?")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: its rendered text (code spans, emphasis, links
    and HTML reduced to their text), lowercased; letters, marks, digits, connector
    punctuation (``_``), ``-`` and spaces kept, everything else dropped; each space a ``-``."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)
    kept = []
    for ch in text.strip().lower():
        category = unicodedata.category(ch)
        if ch in " -" or category[0] in "LMN" or category == "Pc":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def outside_fences(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every line outside fenced code blocks."""
    fence = ""
    for number, line in enumerate(lines, 1):
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        yield number, line


def page_anchors(text: str) -> set[str]:
    """The anchors GitHub makes on a Markdown page: headings' slugs, numbered when repeated,
    and the ids of ``<a id=...>`` / ``<a name=...>``."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in outside_fences(text.splitlines()):
        found.update(HTML_ANCHOR.findall(line))
        heading = ATX.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def explicit_ids(text: str) -> list[str]:
    """Headings that carry a ``{#id}`` (shown as text on GitHub, never an anchor)."""
    return [
        f"{number}: {line.strip()}"
        for number, line in outside_fences(text.splitlines())
        if ATX.match(line) and EXPLICIT_ID.search(line)
    ]


def page_links(text: str) -> list[tuple[int, str]]:
    """``(line, target)`` of every inline link, image and reference definition outside code."""
    found: list[tuple[int, str]] = []
    for number, line in outside_fences(text.splitlines()):
        plain = CODE_SPAN.sub("code", line)
        definition = REFERENCE_DEF.match(plain)
        if definition:
            found.append((number, definition.group(1)))
            continue
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(plain)]
    return found


@cache
def anchors_of(path: Path) -> frozenset[str]:
    return frozenset(page_anchors(path.read_text(encoding="utf-8")))


def resolve(root: Path, page: Path, target: str) -> str | None:
    """Why the link ``target`` written on ``page`` leads nowhere, or ``None`` when it leads
    somewhere (external links are not followed)."""
    if not target or SCHEME.match(target):
        return None
    path_part, _, anchor = unquote(target).partition("#")
    if path_part.startswith("/"):
        destination = root / path_part.lstrip("/")
    else:
        destination = (page.parent / path_part) if path_part else page
    if not destination.exists():
        return f"no file {path_part}"
    if not anchor:
        return None
    if destination.suffix != ".md":
        return None if LINE_ANCHOR.match(anchor) else f"#{anchor} on a file that has none"
    if anchor not in anchors_of(destination.resolve()):
        return f"no heading #{anchor} in {destination.relative_to(root).as_posix()}"
    return None


def markdown_pages(root: Path) -> list[Path]:
    pages = [root / "README.md"] if (root / "README.md").exists() else []
    return pages + sorted((root / "docs").glob("*.md"))


def broken_links(root: Path) -> list[str]:
    """``page:line: target: why`` for every relative link of the pages that leads nowhere."""
    problems: list[str] = []
    for page in markdown_pages(root):
        rel = page.relative_to(root).as_posix()
        for number, target in page_links(page.read_text(encoding="utf-8")):
            why = resolve(root, page, target)
            if why:
                problems.append(f"{rel}:{number}: {target}: {why}")
    return problems


def headings_with_ids(root: Path) -> list[str]:
    return [
        f"{page.relative_to(root).as_posix()}:{heading}"
        for page in markdown_pages(root)
        for heading in explicit_ids(page.read_text(encoding="utf-8"))
    ]


def citing_files(root: Path, folders: Iterable[str] = CITING) -> Iterator[Path]:
    """The files whose text may cite ``docs/...``: the folders' text files, then the pages."""
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in CITING_SUFFIXES
                and "node_modules" not in path.parts
            ):
                yield path
    yield from markdown_pages(root)


def broken_citations(root: Path, folders: Iterable[str] = CITING) -> list[str]:
    """``file:line: docs/...: why`` for every cited page or anchor that does not exist."""
    problems: list[str] = []
    docs = root / "docs"
    for path in citing_files(root, folders):
        if path == Path(__file__).resolve():
            continue
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITATION.finditer(line):
                page, anchor = docs / match.group(1), match.group(2)
                cited = match.group(0)
                if not page.is_file():
                    problems.append(f"{rel}:{number}: {cited}: no such page")
                elif anchor and anchor not in anchors_of(page.resolve()):
                    problems.append(f"{rel}:{number}: {cited}: no such heading")
    return problems


# -- the project ------------------------------------------------------------------------------


def test_no_heading_carries_an_explicit_id() -> None:
    assert headings_with_ids(REPO) == []


def test_every_relative_link_of_the_docs_leads_somewhere() -> None:
    assert broken_links(REPO) == []


def test_every_docs_anchor_cited_in_the_code_exists() -> None:
    assert broken_citations(REPO) == []


def test_the_checkers_read_the_project() -> None:
    # Guards against a checker that reads nothing: the project has pages, links and citations.
    pages = markdown_pages(REPO)
    assert len(pages) > 10
    assert sum(len(page_links(p.read_text(encoding="utf-8"))) for p in pages) > 100
    cited = sum(len(CITATION.findall(p.read_text(encoding="utf-8"))) for p in citing_files(REPO))
    assert cited > 100


# -- the rules and the checkers on known cases ------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Timer and idle rule", "timer-and-idle-rule"),
        ("Dashboard (`/admin`)", "dashboard-admin"),
        ("Collection page (`/admin/collections/{id}`)", "collection-page-admincollectionsid"),
        (
            "P@k, R@k, MAP, MRR (`rel_threshold`, `precision_denominator`)",
            "pk-rk-map-mrr-rel_threshold-precision_denominator",
        ),
        ("ERR (`r_max`)", "err-r_max"),
        ("Leaderboard and `heapjudge compare`", "leaderboard-and-heapjudge-compare"),
        ("Spec → create → session", "spec--create--session"),
        ("**Bold** and [a link](x.md)", "bold-and-a-link"),
        ("Ünïcode stays", "ünïcode-stays"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_repeated_headings_are_numbered_and_fences_hold_no_headings() -> None:
    text = '# Notes\n## Notes\n```\n# Notes\n```\n### Notes\n<a id="kept"></a>\n'
    assert page_anchors(text) == {"notes", "notes-1", "notes-2", "kept"}


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    files = {
        "README.md": f"See [the guide]({D}/guide.md#keys), [gone]({D}/gone.md), "
        "[site](https://example.org/x#y) and `[not a link](nowhere.md)`.\n",
        f"{D}/guide.md": "# Guide\n## Keys {#keys}\n## Layout\n[up](#layout) [down](#nope)\n"
        "[ref]: other.md#missing\n```\n[in a fence](fence.md)\n```\n"
        "[line](../app/mod.py#L3) [odd](../app/mod.py#top)\n",
        f"{D}/other.md": "# Other\n",
        "app/mod.py": f'"""See {D}/guide.md#layout, {D}/guide.md#keys and {D}/none.md#x."""\n',
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    anchors_of.cache_clear()
    return tmp_path


def test_checkers_see_a_bad_tree(bad_tree: Path) -> None:
    assert headings_with_ids(bad_tree) == [f"{D}/guide.md:2: ## Keys {{#keys}}"]
    assert broken_links(bad_tree) == [
        f"README.md:1: {D}/guide.md#keys: no heading #keys in {D}/guide.md",
        f"README.md:1: {D}/gone.md: no file {D}/gone.md",
        f"{D}/guide.md:4: #nope: no heading #nope in {D}/guide.md",
        f"{D}/guide.md:5: other.md#missing: no heading #missing in {D}/other.md",
        f"{D}/guide.md:9: ../app/mod.py#top: #top on a file that has none",
    ]
    assert broken_citations(bad_tree, ["app"]) == [
        f"app/mod.py:1: {D}/guide.md#keys: no such heading",
        f"app/mod.py:1: {D}/none.md#x: no such page",
        f"README.md:1: {D}/guide.md#keys: no such heading",
        f"README.md:1: {D}/gone.md: no such page",
    ]
