"""Prompts of the model-backed question writers and verifiers, and the reading of their answers.

Shared by ``openai_http`` (several frames per request) and ``hf_vlm`` (one frame per request):
the texts are ours, written after seed 001's Tables 15–16 but asking for strict JSON so that an
answer is either usable as it stands or rejected with a reason — never guessed at. Each text
is a :class:`string.Template` kept verbatim in ``tests/backends/golden/`` (a change is
deliberate) and hashed into :data:`PROMPTS_VERSION`, which every written question and verdict
records.

What the prompts ask for (seed 001, App. D.2): an object needle is described by a noun phrase
and a scene needle by one visual sentence; the question asks *when* the target appears; facts
only the subtitles tell are not allowed (the subtitles come marked "do not rely on this
alone"); an object too abstract to ground is skipped; and the target object is shown outlined
in red while the answer must never mention that marking, the pictures or frames.

The module also holds our own question templates (:data:`OBJECT_TEMPLATES`,
:data:`SCENE_TEMPLATES`), with which the embedded writer phrases questions without a model.
Object questions wrap an object description (a noun phrase such as "the white cat on the
left"); scene questions wrap a scene clause ("a scene with a white cat, in a setting tagged
brick wall and street"). Each template has a stable id, recorded with the question, and a
snapshot test renders them all (``tests/nemo/golden``): changing a phrasing is deliberate and
changes :data:`TEMPLATES_VERSION`. Neither the description nor the template sits at the start
of a sentence, so descriptions keep their own lower-case first letter.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Sequence
from string import Template
from typing import Literal, TypeAlias

#: Bumped by hand when what the prompts ask for changes; part of model-written template ids.
PROMPT_REVISION = "v1"
#: Subtitles are cut to this many characters: context, not a transcript.
MAX_SUBTITLE_CHARS = 600
#: Longest object description (words): a noun phrase, not a paragraph.
MAX_OBJECT_WORDS = 25
#: Longest scene description and question (words).
MAX_SENTENCE_WORDS = 60



def _rules(never: str) -> str:
    return f"""\
Rules:
- State only what can be seen. Check the automatic hints against the frames; do not copy them.
- Never mention {never}: the question will be asked about the video itself.
- Write in English, without explanations."""


_SUBTITLES = """\
Subtitles during the shot (context only: do not rely on this alone, and state nothing that \
only the subtitles tell): $subtitles"""

#: Describes the object outlined in red on the frames shown before this text.
DESCRIBE_OBJECT_PROMPT = Template(f"""\
You are helping to build a video benchmark in which viewers must find when something appears.
$images from one shot of a video. One object is outlined in red in $them: that object is the \
subject. The outline only shows you which object is meant; it is not part of the video.
Automatic hints about the subject (they may be wrong): detected as "$label"; described as \
$hint.
{_SUBTITLES}

If the subject is too abstract or too broad to point at as one thing (the sky, a road, a wall, \
grass, water, a crowd), or you cannot make it out, skip it. Otherwise write:
- description: a noun phrase that tells the subject apart from everything else in the video \
by what can be seen (kind, colour, clothing, action, surroundings), such as "the man in a \
yellow raincoat holding a black umbrella". A phrase, not a sentence.
- question: one question asking when that object appears in the video, ending with "?".
{_rules("the red outline, a box, a marking or the frames")}

Answer with one JSON object and nothing else:
{{"skip": false, "reason": "", "description": "...", "question": "..."}}
To skip, answer: {{"skip": true, "reason": "<why>", "description": "", "question": ""}}""")

#: Describes the shot whose frames are shown before this text.
DESCRIBE_SCENE_PROMPT = Template(f"""\
You are helping to build a video benchmark in which viewers must find when something appears.
$images from one shot of a video: that shot is the subject.
Automatic hints about the shot (they may be wrong): tagged $tags.
{_SUBTITLES}

If the shot shows nothing concrete enough to recognise again (a black screen, a blur, a plain \
title card), skip it. Otherwise write:
- description: one complete sentence saying what the shot shows (the setting, the people or \
things in it, what happens) so that a viewer could recognise it among the other shots of the \
video.
- question: one question that contains what the description says and asks when this scene is \
shown in the video, ending with "?".
{_rules("the frames or how they were taken")}

Answer with one JSON object and nothing else:
{{"skip": false, "reason": "", "description": "...", "question": "..."}}
To skip, answer: {{"skip": true, "reason": "<why>", "description": "", "question": ""}}""")

_VERIFY_TAIL = """\
Judge only from what can be seen in this clip; ignore anything only sound or subtitles could \
tell. It fits only when everything the description states can be seen here.
Answer with one JSON object and nothing else: {"fits": true or false, "why": "<one short \
sentence>"}"""

#: The target clip of an object needle: does the description pick out the outlined object?
VERIFY_MARKED_PROMPT = Template(f"""\
You are checking an item of a video benchmark. $images from one short clip of a video. One \
object is outlined in red in $them; the outline is not part of the video.
Description: "$description"
Does the description fit the outlined object, and single it out from the other things in the \
clip?
{_VERIFY_TAIL}""")

#: Any other clip of an object needle: does some object here fit the description?
VERIFY_OBJECT_PROMPT = Template(f"""\
You are checking an item of a video benchmark. $images from one short clip of a video.
Description: "$description"
Does this clip show an object that fits the description?
{_VERIFY_TAIL}""")

#: Every clip of a scene needle: does the description fit what the clip shows?
VERIFY_SCENE_PROMPT = Template(f"""\
You are checking an item of a video benchmark. $images from one short clip of a video.
Description: "$description"
Does the description fit what this clip shows?
{_VERIFY_TAIL}""")

_ALL_PROMPTS = (DESCRIBE_OBJECT_PROMPT, DESCRIBE_SCENE_PROMPT, VERIFY_MARKED_PROMPT,
                VERIFY_OBJECT_PROMPT, VERIFY_SCENE_PROMPT)
#: Changes with any prompt text: recorded in every model-written question and verdict.
PROMPTS_VERSION = PROMPT_REVISION + "+" + hashlib.sha256(
    json.dumps([p.template for p in _ALL_PROMPTS]).encode("utf-8")
).hexdigest()[:8]

ClipKind: TypeAlias = Literal["marked", "object", "scene"]
_VERIFY_PROMPTS = {"marked": VERIFY_MARKED_PROMPT, "object": VERIFY_OBJECT_PROMPT,
                   "scene": VERIFY_SCENE_PROMPT}

#: Mentions of the visual prompt or of the medium; an answer holding one is refused. Narrow
#: on purpose: "a picture frame" or "a red box on the table" describe things, not the marking.
_MARKING_RE = re.compile(
    r"\b(?:bounding\s+box(?:es)?|red\s+(?:rectangle|outline|marking)|"
    r"(?:outlined|highlighted|boxed|circled|marked)\s+(?:in\s+red|object|item|area|region)|"
    r"the\s+(?:outline|marking)|"
    r"(?:in|on)\s+(?:the|this|these|each|every|all)\s+(?:images?|frames?|pictures?|photos?)|"
    r"(?:the|this|these)\s+(?:images?|frames?|pictures?)\s+(?:shows?|above|below))\b",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"[.!?]\s+[A-Z]")
_SNIPPET_CHARS = 120


class AnswerFormatError(ValueError):
    """A model's answer is not the JSON object its prompt asked for; the message says why."""


class UnparseableAnswer(AnswerFormatError):
    """The answer holds no JSON object with the keys and types asked for (prose, say): the
    model did not follow the protocol at all, as opposed to breaking a rule of the content
    (a description too long), which a model that follows it may do now and then."""


@dataclasses.dataclass(frozen=True, slots=True)
class WriterAnswer:
    """A describer's answer as it was parsed (``skip`` answers carry only a reason)."""

    skip: bool
    reason: str
    description: str
    question: str


@dataclasses.dataclass(frozen=True, slots=True)
class FitAnswer:
    """A verifier's answer about one clip."""

    fits: bool
    why: str


def _images(count: int) -> str:
    return "The frame above is" if count == 1 else f"The {count} frames above are, in order,"


def _them(count: int) -> str:
    return "it" if count == 1 else "them"


def _flat(text: str, *, limit: int | None = None) -> str:
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        flat = flat[:limit].rstrip() + "…"
    return flat


def describe_prompt(
    needle_type: Literal["object", "scene"], *, n_images: int, subtitles: str,
    label: str = "", hint: str = "", tags: tuple[str, ...] = (),
) -> str:
    """The describer's prompt for ``n_images`` frames shown before it.

    ``label``/``hint`` (object needles) are the detector label and the referring expression;
    ``tags`` (scene needles) the scene's tags and object labels, best first.

    Raises:
        ValueError: when ``n_images < 1``.
    """
    if n_images < 1:
        raise ValueError(f"n_images = {n_images} must be >= 1")
    subs = _flat(subtitles, limit=MAX_SUBTITLE_CHARS) or "(none)"
    if needle_type == "object":
        return DESCRIBE_OBJECT_PROMPT.substitute(
            images=_images(n_images), them=_them(n_images), label=_flat(label) or "unknown",
            hint=f'"{_flat(hint)}"' if hint.strip() else "(nothing)", subtitles=subs)
    listed = ", ".join(f'"{t}"' for t in tags) if tags else "(no tags)"
    return DESCRIBE_SCENE_PROMPT.substitute(images=_images(n_images), tags=listed,
                                            subtitles=subs)


def verify_prompt(kind: ClipKind, *, n_images: int, description: str) -> str:
    """The verifier's prompt about one clip of ``n_images`` frames shown before it.

    Raises:
        ValueError: when ``n_images < 1``.
    """
    if n_images < 1:
        raise ValueError(f"n_images = {n_images} must be >= 1")
    return _VERIFY_PROMPTS[kind].substitute(images=_images(n_images), them=_them(n_images),
                                            description=_flat(description))


def snippet(text: str) -> str:
    """The start of an answer on one line, for reasons and error messages."""
    return repr(_flat(text, limit=_SNIPPET_CHARS))


def extract_json_object(text: str) -> dict[str, object]:
    """The first JSON object in ``text``, tolerating code fences and text around it.

    Raises:
        AnswerFormatError: when no ``{...}`` in the text decodes to a JSON object.
    """
    decoder = json.JSONDecoder()
    cleaned = text.replace("```json", "```").replace("```JSON", "```")
    for match in re.finditer(r"\{", cleaned):
        try:
            value, _ = decoder.raw_decode(cleaned, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise UnparseableAnswer(f"no JSON object in the answer {snippet(text)}")


def _field(data: dict[str, object], key: str, kind: type) -> object:
    if key not in data:
        raise UnparseableAnswer(f"the JSON object lacks {key!r} (keys: {sorted(data)})")
    value = data[key]
    # bool is an int subclass and "false" is a str: check the exact type asked for.
    if type(value) is not kind:
        raise UnparseableAnswer(f"{key!r} is {type(value).__name__} {value!r}, not "
                                f"{kind.__name__}")
    return value


def parse_writer_answer(
    text: str, *, needle_type: Literal["object", "scene"]
) -> WriterAnswer:
    """The describer's answer, checked against what its prompt demands.

    Raises:
        AnswerFormatError: no JSON object, a missing key or a value of the wrong type, an
            empty description or question, a description that is not a short phrase (object)
            or a single sentence (scene), a question without "?", or an answer mentioning
            the marking, the pictures or the frames.
    """
    data = extract_json_object(text)
    skip = bool(_field(data, "skip", bool))
    reason = _flat(str(_field(data, "reason", str)))
    if skip:
        return WriterAnswer(True, reason or "(no reason given)", "", "")
    description = _flat(str(_field(data, "description", str)))
    question = _flat(str(_field(data, "question", str)))
    if not description or not question:
        raise AnswerFormatError("description and question must both be non-empty unless "
                                "skip is true")
    for name, value in (("description", description), ("question", question)):
        mention = _MARKING_RE.search(value)
        if mention:
            raise AnswerFormatError(f"the {name} mentions {mention.group(0)!r} (the marking or "
                                    f"the pictures): {value!r}")
    if needle_type == "object":
        description = description.rstrip(".")
        if len(description.split()) > MAX_OBJECT_WORDS or _SENTENCE_BREAK.search(description):
            raise AnswerFormatError(f"the description is not a noun phrase of at most "
                                    f"{MAX_OBJECT_WORDS} words: {description!r}")
    elif (len(description.split()) > MAX_SENTENCE_WORDS
          or _SENTENCE_BREAK.search(description.rstrip(".!? "))):
        raise AnswerFormatError(f"the description is not one sentence of at most "
                                f"{MAX_SENTENCE_WORDS} words: {description!r}")
    if not question.endswith("?") or len(question.split()) > MAX_SENTENCE_WORDS:
        raise AnswerFormatError(f"the question must be one question ending with '?': "
                                f"{question!r}")
    return WriterAnswer(False, reason, description, question)


def parse_fit_answer(text: str) -> FitAnswer:
    """The verifier's answer about one clip.

    Raises:
        AnswerFormatError: no JSON object, or ``fits`` missing or not a boolean, or ``why``
            missing or not a string.
    """
    data = extract_json_object(text)
    fits = bool(_field(data, "fits", bool))
    why = _flat(str(_field(data, "why", str)))
    return FitAnswer(fits, why or "(no reason given)")


# --- our question templates (the embedded writer's phrasings, seed 001 Table 17) ---------

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
