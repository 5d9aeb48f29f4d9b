"""Response parsing: a broad table of real-looking answers, and the promise never to raise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.evaluate import is_refusal, parse_choice, parse_spans

OPTIONS = ("Alice", "Bob", "Carol", "Dave")


@pytest.mark.parametrize(("text", "spans"), [
    ("12.5 to 20", [(12.5, 20.0)]),
    ("12 s - 18 s", [(12.0, 18.0)]),
    ("From 12s to 18s.", [(12.0, 18.0)]),
    ("10 seconds until 15 seconds", [(10.0, 15.0)]),
    ("00:10-00:15", [(10.0, 15.0)]),
    ("01:05 – 01:20", [(65.0, 80.0)]),
    ("1:02:03 — 1:02:10", [(3723.0, 3730.0)]),
    ("0:01:02.5 to 0:01:04", [(62.5, 64.0)]),
    ("10~20", [(10.0, 20.0)]),
    ("1m30s-2m", [(90.0, 120.0)]),
    ("from 3 min to 4 minutes", [(180.0, 240.0)]),
    ("between 10 and 15 seconds", [(10.0, 15.0)]),
    ("from 10 to 15 and 40-45", [(10.0, 15.0), (40.0, 45.0)]),
    ("The needle appears from 10 to 15, then again 40 - 45 s.", [(10.0, 15.0), (40.0, 45.0)]),
    ("[[10, 15], [40, 45]]", [(10.0, 15.0), (40.0, 45.0)]),
    ("[10.5, 15]", [(10.5, 15.0)]),
    ("(3, 5)", [(3.0, 5.0)]),
    ('{"start": 3, "end": 7.5}', [(3.0, 7.5)]),
    ('[{"start_s": 1, "end_s": 2}, {"start_s": 5, "end_s": 6}]', [(1.0, 2.0), (5.0, 6.0)]),
    ("I cannot be sure, but roughly 30-35 s.", [(30.0, 35.0)]),
    ("**20 - 25**", [(20.0, 25.0)]),
    ("7 to 7", [(7.0, 7.0)]),
])
def test_spans_parse(text: str, spans: list[tuple[float, float]]) -> None:
    parsed = parse_spans(text)
    assert parsed.status == "ok", parsed.reason
    assert list(parsed.spans) == spans


@pytest.mark.parametrize(("text", "status", "reason"), [
    ("", "unparsed", "no time range"),
    ("at 12 s", "unparsed", "no time range"),               # a point is not a span
    ("The object is a red car.", "unparsed", "no time range"),
    ("from 15 to 10", "unparsed", "reversed"),                # never swapped
    ("from 10 to 15 and 40 to 30", "unparsed", "reversed"),   # one bad range spoils the answer
    ("1:75-2:00", "unparsed", "impossible clock time"),
    ("I'm sorry, I can't help with that.", "refused", "declines"),
    ("It is not possible to determine when this happens.", "refused", "declines"),
    ("I cannot determine the time of the scene.", "refused", "declines"),
])
def test_spans_unparsed_and_refused(text: str, status: str, reason: str) -> None:
    parsed = parse_spans(text)
    assert parsed.status == status
    assert reason in parsed.reason
    assert parsed.spans == ()


@pytest.mark.parametrize(("text", "index"), [
    ("B", 1),
    ("b", 1),
    ("(B)", 1),
    ("[C]", 2),
    ("b)", 1),
    ("B.", 1),
    ("**B**", 1),
    ("Answer: B", 1),
    ("**Answer:** C", 2),
    ("answer: (b)", 1),
    ("The answer is B.", 1),
    ("The answer is b.", 1),
    ("The correct answer is option D.", 3),
    ("Option A", 0),
    ("The best choice is (C) Carol", 2),
    ("B. Carol", 1),
    ("(A) Alice", 0),
    ("B: Bob", 1),
    ("C) Carol, because the subtitle says so.", 2),
    ("Carol", 2),
    ("carol.", 2),
    ("The secret word is Dave.", 3),
    ("I choose C.", 2),
    ("A cat walks by; the word shown is D.", 3),   # "A cat": the article, not option A
    ("The answer is B. Options A and C do not appear.", 1),  # the statement outranks the rest
])
def test_choice_parses(text: str, index: int) -> None:
    parsed = parse_choice(text, options=OPTIONS)
    assert parsed.status == "ok", parsed.reason
    assert parsed.index == index


@pytest.mark.parametrize(("text", "status", "reason"), [
    ("A or B", "unparsed", "ambiguous"),
    ("(A) or (C)", "unparsed", "ambiguous"),
    ("B/C", "unparsed", "ambiguous"),
    ("I think it is C, not A", "unparsed", "ambiguous"),
    ("The answer is B or the answer is C", "unparsed", "ambiguous"),
    ("Bob and Carol", "unparsed", "several options"),
    ("answer is a dog", "unparsed", "no option"),
    ("", "unparsed", "empty"),
    ("   **  ", "unparsed", "empty"),
    ("E", "unparsed", "no option"),
    ("I cannot determine the answer from the video.", "refused", "declines"),
    ("Sorry, I'm unable to answer.", "refused", "declines"),
])
def test_choice_unparsed_and_refused(text: str, status: str, reason: str) -> None:
    parsed = parse_choice(text, options=OPTIONS)
    assert (parsed.status, parsed.index) == (status, None)
    assert reason in parsed.reason


def test_option_text_of_counting_options_matches_whole_words_only() -> None:
    counts = ("3", "13", "5", "30")
    assert parse_choice("13", options=counts).index == 1
    assert parse_choice("It appears 5 times.", options=counts).index == 2
    assert parse_choice("3 or 5 times", options=counts).status == "unparsed"


def test_ordering_options_match_regardless_of_punctuation() -> None:
    orders = ("apple -> pear -> fig", "pear -> apple -> fig", "fig -> pear -> apple",
              "apple -> fig -> pear")
    assert parse_choice("The order is pear, apple, fig.", options=orders).index == 1


def test_refusal_detector() -> None:
    assert is_refusal("I'm sorry, but I can't assist with that request.")
    assert not is_refusal("The car appears from 10 to 15 seconds.")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parsers_never_raise(text: str) -> None:
    spans = parse_spans(text)
    assert spans.status in ("ok", "unparsed", "refused")
    assert all(s <= e for s, e in spans.spans)
    choice = parse_choice(text, options=OPTIONS)
    assert (choice.index is None) == (choice.status != "ok")
