"""LLM prompt templates: pinned hashes, rendering, answer parsing, the two-order combination."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labeling.machine.llm_prompts import (
    GRADED_V1,
    PAIRWISE_V1,
    TEMPLATES,
    combine_orders,
    parse_graded,
    parse_pairwise,
    probability_from_logprobs,
)

#: Pinned: a template's text must not change under the same version. Editing a template means
#: a new version (and a new entry here); labels keep naming the prompt they were made with.
PINNED = {
    "pairwise@v1": "a0011ebead90f777",
    "graded@v1": "abbc92956be2022a",
    "pairwise@v2": "29f7dcb4635281b9",
    "graded@v2": "da591bef32a01081",
}


def test_template_hashes_are_pinned() -> None:
    assert {k: t.hash for k, t in TEMPLATES.items()} == PINNED


@pytest.mark.parametrize(
    "change",
    [
        {"version": 2},
        {"name": "other"},
        {"system": "x"},
        {"user": PAIRWISE_V1.user + " "},
        {"max_doc_chars": 10},
        {"fenced": True},
    ],
)
def test_any_change_changes_the_hash(change: dict[str, object]) -> None:
    assert dataclasses.replace(PAIRWISE_V1, **change).hash != PAIRWISE_V1.hash  # type: ignore[arg-type]


def test_render_puts_the_documents_in_order_and_cuts_them() -> None:
    messages = PAIRWISE_V1.render("wing flutter", "first text", "second text")
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert '"wing flutter"' in user
    assert user.index("Passage A:\nfirst text") < user.index("Passage B:\nsecond text")
    short = dataclasses.replace(PAIRWISE_V1, max_doc_chars=5)
    assert "Passage A:\nfirst …" in short.render("q", "first text", "b")[1]["content"]
    graded = GRADED_V1.render("q", "the document")[1]["content"]
    assert "Passage:\nthe document" in graded and "0 to 4" in graded
    with pytest.raises(ValueError):
        PAIRWISE_V1.render("q", "a")
    with pytest.raises(ValueError):
        GRADED_V1.render("q", "a", "b")


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("A", "A"),
        ("b", "B"),
        (" B.\n", "B"),
        ("**A**", "A"),
        ("[[B]]", "B"),
        ("Passage A", "A"),
        ("The answer is B.", "B"),
        ('"A"', "A"),
        ("A or B", None),
        ("Passage A is better than passage B", None),
        ("both are relevant", None),
        ("a", "A"),
        ("I think it is a tie", None),
        ("", None),
        (None, None),
        ("C", None),
    ],
)
def test_parse_pairwise(reply: str | None, answer: str | None) -> None:
    assert parse_pairwise(reply) == answer


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("3", 3),
        ("0", 0),
        ("Grade: 4", 4),
        ("**2**", 2),
        ("5", None),
        ("2 or 3", None),
        ("3.5", None),
        ("-1", None),  # a negative grade is malformed, not grade 1
        ("Grade 3.", 3),
        ("", None),
        (None, None),
        ("relevant", None),
    ],
)
def test_parse_graded(reply: str | None, grade: int | None) -> None:
    assert parse_graded(reply) == grade


def test_probability_from_logprobs() -> None:
    lp = {"A": math.log(0.6), " B": math.log(0.2), "a": math.log(0.1), "The": math.log(0.1)}
    assert probability_from_logprobs(lp) == pytest.approx(0.7 / 0.9)
    assert probability_from_logprobs({"Yes": -0.1}) is None
    assert probability_from_logprobs({"A": -math.inf, "B": 0.0}) == 0.0


def test_combine_orders() -> None:
    assert combine_orders(1.0, 0.0) == 1.0  # both orders name A
    assert combine_orders(1.0, 1.0) == 0.5  # always the first shown: cancelled
    assert combine_orders(0.8, 0.4) == pytest.approx(0.7)
    assert combine_orders(1.0, None) == 0.75  # no opinion counts as 0.5
    assert combine_orders(None, 1.0) == 0.25
    assert combine_orders(None, None) is None
    assert combine_orders(1.0, None, require_both=True) is None
    with pytest.raises(ValueError):
        combine_orders(1.5, 0.0)
