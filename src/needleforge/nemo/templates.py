"""Our question templates and the English helpers the embedded describer writes with.

Object questions wrap an object description (a noun phrase such as "the white cat on the
left"); scene questions wrap a scene clause ("a scene with a white cat, in a setting tagged
brick wall and street"). Each template has a stable id, recorded with the question, and a
snapshot test renders them all (``tests/nemo/golden``): changing a phrasing is deliberate and
changes :data:`TEMPLATES_VERSION`. Neither the description nor the template sits at the start
of a sentence, so descriptions keep their own lower-case first letter.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Literal

#: ``(template_id, text)``; ``{obj}`` is the object description.
OBJECT_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("object/when-appear", "When does {obj} appear in the video?"),
    ("object/what-point", "At what point in the video can {obj} be seen?"),
    ("object/find-moments", "Find the moments showing {obj}."),
    ("object/which-part", "Which part of the video shows {obj}?"),
    ("object/on-screen", "During which seconds is {obj} on screen?"),
    ("object/start-end", "Give the start and end times of the shot featuring {obj}."),
    ("object/spot", "Where in the timeline do we spot {obj}?"),
)

#: ``(template_id, text)``; ``{scene}`` is a scene clause starting in lower case.
SCENE_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("scene/when-shown", "When in the video is there {scene}?"),
    ("scene/find-moment", "Find the moment that shows {scene}."),
    ("scene/at-what-time", "At what time does the video show {scene}?"),
    ("scene/which-part", "Which part of the video contains {scene}?"),
    ("scene/locate", "Locate {scene}: when does it start and end?"),
)

#: Changes whenever a template text or id changes, so questions record which set wrote them.
TEMPLATES_VERSION = "1+" + hashlib.sha256(
    json.dumps([OBJECT_TEMPLATES, SCENE_TEMPLATES]).encode("utf-8")
).hexdigest()[:8]


def choose_template(
    kind: Literal["object", "scene"], *, key: str, seed: int
) -> tuple[str, str]:
    """The template for ``key`` (a target id): sha256 of seed and key, modulo the count.

    A hash rather than a shared random stream, so a target's phrasing does not change when
    other targets are added or dropped.
    """
    templates = OBJECT_TEMPLATES if kind == "object" else SCENE_TEMPLATES
    digest = hashlib.sha256(f"{seed}:{kind}:{key}".encode()).hexdigest()
    return templates[int(digest, 16) % len(templates)]


def join_words(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` → ``"a, b and c"``.

    Raises:
        ValueError: when ``items`` is empty.
    """
    if not items:
        raise ValueError("join_words needs at least one item")
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} and {items[-1]}"


def with_article(phrase: str) -> str:
    """``"white cat"`` → ``"a white cat"``, ``"orange cup"`` → ``"an orange cup"``."""
    article = "an" if phrase[:1].lower() in "aeiou" else "a"
    return f"{article} {phrase}"


def sentence(clause: str) -> str:
    """A clause as a sentence: first letter upper-cased, a full stop at the end."""
    return clause[:1].upper() + clause[1:] + "."
