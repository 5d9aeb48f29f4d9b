"""Prompts for the VLM tagger and the parsing of its answers (pure functions, no torch).

Kept apart from model code so prompt changes show up as deliberate diffs (the tests hold a
snapshot of each prompt) and parsing can be tested on hand-written answers: random-weight test
models only ever produce noise.

Answer parsing is forgiving because instruction-tuned VLMs rarely follow a format exactly:
they number or bullet items, add "and", articles, a closing period, or a lead-in such as "I can
see". Anything that still looks like a sentence after clean-up is dropped rather than guessed at.
"""

from __future__ import annotations

import re

import numpy as np
from PIL import Image, ImageDraw

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.records import Box, TagScore

#: Asks for the visible objects as a bare list of short nouns.
TAG_PROMPT = (
    "What objects can be seen in this image? Reply with a single line: a comma-separated list "
    "of short nouns (one or two words each), with no sentences, numbers or explanations."
)

#: Asks for a referring expression for the object inside the drawn rectangle.
DESCRIBE_PROMPT = (
    "One object in this image is outlined by a red rectangle. Reply with a short noun phrase, "
    "at most twelve words, that singles out that object from everything else in the image, "
    "using its kind and, where they help, its colour, position or action. Do not mention the "
    "rectangle or the outline. Reply with the phrase only."
)

#: Every tag parsed from a VLM answer gets this score: generation yields no calibrated
#: per-tag confidence, and a tag the model chose to name is a positive decision.
VLM_TAG_SCORE = 1.0
#: Items longer than this (words / characters) are sentences, not tags, and are dropped.
MAX_TAG_WORDS = 3
MAX_TAG_CHARS = 32
#: A referring expression is cut to this many words.
MAX_EXPRESSION_WORDS = 16
#: The outline colour named in :data:`DESCRIBE_PROMPT`.
BOX_COLOUR = (255, 0, 0)

_ITEM_SEPARATORS = re.compile(r"[,;\n]|\s+and\s+(?=(?:an?|the)\s)|\s+&\s+", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•·]+|\d+\s*[.):]|[a-z]\))\s*")
_LEAD_IN = re.compile(
    r"^(?:i\s+(?:can\s+)?see|there\s+(?:is|are)|(?:the|this)\s+(?:image|picture|photo)\s+"
    r"(?:shows|contains|has)|objects?\s*:|answer\s*:|tags?\s*:)\s*",
    re.IGNORECASE,
)
_LEADING_WORDS = re.compile(r"^(?:(?:and|or|also|a|an|the|some)\s+)+")
_NOT_TAG_CHARS = re.compile(r"[^a-z0-9 '\-]+")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_EXPRESSION_LEAD_IN = re.compile(
    r"^(?:(?:the\s+)?(?:outlined\s+|highlighted\s+|boxed\s+)?object\s+is|it\s+is|it's|"
    r"this\s+is|answer\s*:|phrase\s*:)\s*",
    re.IGNORECASE,
)
_BOX_MENTION = re.compile(
    r"\s*,?\s*\b(?:(?:that\s+is\s+|which\s+is\s+)?(?:in|inside|within|outlined\s+by|"
    r"highlighted\s+by|surrounded\s+by)\s+(?:the|a)\s+(?:red\s+)?(?:rectangle|box|outline|"
    r"bounding\s+box)|(?:outlined|highlighted|boxed)(?:\s+in\s+red)?)\b",
    re.IGNORECASE,
)


def parse_tag_answer(answer: str) -> list[TagScore]:
    """Tags from a VLM's answer to :data:`TAG_PROMPT`, in answer order, each scored 1.0.

    Items are split on commas, semicolons, newlines and "and a/an/the"; each is stripped of
    bullets, numbering, lead-ins ("I can see"), leading "and"/articles/"some", and of
    characters other than letters, digits, spaces, hyphens and apostrophes, then lower-cased.
    Items with no letter, more than :data:`MAX_TAG_WORDS` words or :data:`MAX_TAG_CHARS`
    characters are dropped; repeats keep their first place.
    """
    seen: dict[str, None] = {}
    for raw in _ITEM_SEPARATORS.split(answer):
        tag = clean_tag(raw)
        if tag is not None:
            seen.setdefault(tag, None)
    return [TagScore(tag=tag, score=VLM_TAG_SCORE) for tag in seen]


def clean_tag(item: str) -> str | None:
    """One list item as a tag, or ``None`` when nothing tag-like is left (see
    :func:`parse_tag_answer`)."""
    text = _BULLET.sub("", item.strip())
    text = _LEAD_IN.sub("", text).lower()
    text = _NOT_TAG_CHARS.sub(" ", text)
    text = _SPACES.sub(" ", text).strip(" '-")
    text = _LEADING_WORDS.sub("", text).strip(" '-")
    if not any(ch.isalpha() for ch in text):
        return None
    if len(text.split()) > MAX_TAG_WORDS or len(text) > MAX_TAG_CHARS:
        return None
    return text


def clean_referring_expression(answer: str) -> str:
    """A referring expression from a VLM's answer to :data:`DESCRIBE_PROMPT`.

    Keeps the first non-blank line; drops quotes, markdown emphasis, lead-ins ("It is"),
    mentions of the drawn rectangle ("in the red box", "highlighted"), spaces before
    punctuation and trailing punctuation; cuts to :data:`MAX_EXPRESSION_WORDS` words.
    Returns ``""`` when nothing is left, so callers can fall back to an attribute-based
    expression.
    """
    line = next((ln for ln in answer.splitlines() if ln.strip()), "")
    text = line.replace("**", "").replace("__", "").strip().strip("\"'`“”‘’ ")
    text = _EXPRESSION_LEAD_IN.sub("", text)
    text = _BOX_MENTION.sub("", text)
    text = _SPACES.sub(" ", text).strip().strip("\"'`“”‘’ ")
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    text = " ".join(text.split()[:MAX_EXPRESSION_WORDS])
    return text.rstrip(".,;:!? ").strip()


def draw_box(image: RGBImage, *, box: Box) -> RGBImage:
    """A copy of ``image`` with ``box`` outlined in :data:`BOX_COLOUR` (visual prompting).

    The outline is about 0.6 % of the longer side thick (at least 2 px) and drawn inside the
    box so that a box touching the frame edge stays fully visible.

    Raises:
        BackendError: when ``image`` is not a uint8 HxWx3 array.
    """
    rgb = ensure_rgb(image)
    height, width = rgb.shape[:2]
    left = round(box.x * width)
    top = round(box.y * height)
    right = max(left, round((box.x + box.w) * width) - 1)
    bottom = max(top, round((box.y + box.h) * height) - 1)
    thickness = max(2, round(0.006 * max(width, height)))
    canvas = Image.fromarray(rgb.copy())
    ImageDraw.Draw(canvas).rectangle(
        (left, top, right, bottom), outline=BOX_COLOUR, width=thickness
    )
    return np.asarray(canvas, dtype=np.uint8)
