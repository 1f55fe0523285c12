"""The identifier, label and text rules of labeling.identifiers, checked against Unicode's
own categories over every code point (an independent oracle: ``unicodedata.category``)."""

from __future__ import annotations

import unicodedata

import pytest

from labeling.identifiers import (
    MAX_IDENTIFIER_CHARS,
    identifier_problem,
    label_problem,
    text_problem,
)


def test_every_code_point_against_its_unicode_category() -> None:
    """An identifier character is one outside the categories Z* and C*; a label character is
    outside C*, Zl and Zp; free text refuses only NUL and surrogates. Planes 0-2 (every
    assigned script), the tag block of plane 14 and the start of private-use plane 15."""
    code_points = [*range(0x30000), *range(0xE0000, 0xE1000), *range(0xF0000, 0xF0100)]
    for cp in code_points:
        char = chr(cp)
        category = unicodedata.category(char)
        ok_id = category[0] not in "ZC"
        ok_label = category[0] != "C" and category not in ("Zl", "Zp")
        ok_text = cp != 0 and category != "Cs"
        assert (identifier_problem(f"a{char}b") is None) == ok_id, hex(cp)
        assert (label_problem(f"a{char}b") is None) == ok_label, hex(cp)
        assert (text_problem(f"a{char}b") is None) == ok_text, hex(cp)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x\ny 9 FAKE 4", "contains U+000A at character 2"),
        ("a b", "contains U+0020 (SPACE) at character 2"),
        ("ok\u202eevil", "contains U+202E (RIGHT-TO-LEFT OVERRIDE) at character 3"),
        ("d\ud800", "contains a lone surrogate U+D800 at character 2"),
        ("", "is empty"),
        ("x" * (MAX_IDENTIFIER_CHARS + 1), "is too long (201 characters)"),
    ],
)
def test_messages_name_the_character_and_position_not_the_value(value: str, message: str) -> None:
    problem = identifier_problem(value)
    assert problem is not None and problem.startswith(message)
    assert problem.encode("utf-8")  # always encodable, whatever the value was


@pytest.mark.parametrize(
    "value", ["FBIS3-10082", "clueweb09-en0000-00-00000", "q:7", "文档-1", "x" * 200, "GX000-00"]
)
def test_real_identifiers_pass(value: str) -> None:
    assert identifier_problem(value) is None
