"""The writer prompts (snapshots), the reading of model answers, and the choice of frames.

Prompt texts are golden files (``tests/backends/golden/writer_prompts``): a change must be
deliberate. After changing a prompt on purpose, regenerate them with
``NEEDLEFORGE_UPDATE_GOLDEN=1 pytest tests/backends/test_backend_writer_prompts.py`` and
review the diff; :data:`PROMPTS_VERSION` changes with them, so new questions record it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends import writer_prompts
from needleforge.backends.base import Keyframe
from needleforge.backends.model_writer import NoFrames, even_pick, marked_frames
from needleforge.backends.writer_prompts import (
    PROMPTS_VERSION,
    AnswerFormatError,
    describe_prompt,
    extract_json_object,
    parse_fit_answer,
    parse_writer_answer,
    verify_prompt,
)
from tests.backends.writer_cases import BOX, has_red_outline, scene, solid, track

GOLDEN = Path(__file__).parent / "golden" / "writer_prompts"
SUBTITLE = "Look, the secret word is marmalade! She said: \"don't\" — 100 % sure."
RENDERED = {
    "describe_object": describe_prompt("object", n_images=4, subtitles=SUBTITLE, label="cat",
                                       hint="the white cat on the left"),
    "describe_object_one_frame": describe_prompt("object", n_images=1, subtitles="",
                                                 label="cup", hint=""),
    "describe_scene": describe_prompt("scene", n_images=4, subtitles=SUBTITLE,
                                      tags=("living room", "sofa", "cat")),
    "verify_marked": verify_prompt("marked", n_images=4, description="the white cat"),
    "verify_object": verify_prompt("object", n_images=1, description="the white cat"),
    "verify_scene": verify_prompt("scene", n_images=4,
                                  description="A cat sleeps on a sofa in a living room."),
}


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_prompt_snapshots(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("NEEDLEFORGE_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RENDERED[name] + "\n", encoding="utf-8")
    assert RENDERED[name] + "\n" == path.read_text(encoding="utf-8")


def test_prompts_follow_the_papers_requirements() -> None:
    obj, scene_prompt = RENDERED["describe_object"], RENDERED["describe_scene"]
    assert "do not rely on this alone" in obj and "do not rely on this alone" in scene_prompt
    assert "marmalade" in obj  # the subtitles are passed, as context only
    assert "noun phrase" in obj and "one complete sentence" in scene_prompt
    assert "Never mention the red outline" in obj and "skip it" in obj
    assert '"skip": true' in obj and '"fits": true or false' in RENDERED["verify_object"]
    assert "the frame above is" in RENDERED["describe_object_one_frame"].lower()
    assert "outlined in red in it:" in RENDERED["describe_object_one_frame"]
    assert 'described as (nothing).' in RENDERED["describe_object_one_frame"]
    long_subtitle = describe_prompt("scene", n_images=1, subtitles="word " * 500)
    assert "word " * 100 in long_subtitle and "…" in long_subtitle


def test_prompts_version_follows_every_prompt_text() -> None:
    assert PROMPTS_VERSION.startswith(writer_prompts.PROMPT_REVISION + "+")
    texts = [p.template for p in writer_prompts._ALL_PROMPTS]
    assert len(texts) == 5 and all(t.strip() for t in texts)
    digest = PROMPTS_VERSION.split("+")[1]
    import hashlib

    changed = json.dumps([*texts[:-1], texts[-1] + " "]).encode()
    assert hashlib.sha256(changed).hexdigest()[:8] != digest


def _answer(**fields: object) -> str:
    base: dict[str, object] = {"skip": False, "reason": "",
                               "description": "the white cat on the sofa",
                               "question": "When does the white cat on the sofa appear?"}
    return json.dumps(base | fields)


@pytest.mark.parametrize(
    "text",
    [
        _answer(),
        f"```json\n{_answer()}\n```",
        f"Sure! Here is the answer:\n{_answer()}\nHope this helps.",
        "{not json} then " + _answer(),
    ],
)
def test_writer_answers_are_found_in_fences_and_chatter(text: str) -> None:
    answer = parse_writer_answer(text, needle_type="object")
    assert not answer.skip
    assert answer.description == "the white cat on the sofa"
    assert answer.question == "When does the white cat on the sofa appear?"


def test_skip_answers_keep_the_models_reason() -> None:
    answer = parse_writer_answer(_answer(skip=True, reason="it is the sky", description="",
                                         question=""), needle_type="object")
    assert answer.skip and answer.reason == "it is the sky"
    no_reason = parse_writer_answer('{"skip": true, "reason": "", "description": "", '
                                    '"question": ""}', needle_type="scene")
    assert no_reason.reason == "(no reason given)"


@pytest.mark.parametrize(
    ("text", "needle_type", "why"),
    [
        ("The white cat on the sofa.", "object", "no JSON object in the answer"),
        ("[1, 2, 3]", "object", "no JSON object"),
        ('{"skip": false, "description": "x", "question": "y?"}', "object", "lacks 'reason'"),
        (_answer(skip="false"), "object", "'skip' is str 'false', not bool"),
        (_answer(skip=0), "object", "'skip' is int 0, not bool"),
        (_answer(description=["a", "cat"]), "object", "'description' is list"),
        (_answer(description=""), "object", "must both be non-empty"),
        (_answer(description="the cat in the red rectangle"), "object", "'red rectangle'"),
        (_answer(description="the cat outlined in red"), "object", "'outlined in red'"),
        (_answer(question="When is the cat in the frames shown?"), "object", "'in the frames'"),
        (_answer(description="the bounding box around a cat"), "object", "'bounding box'"),
        (_answer(description="A cat sits. A dog barks."), "object", "not a noun phrase"),
        (_answer(description=" ".join(["big"] * 26) + " cat"), "object", "at most 25 words"),
        (_answer(description="A cat sits on a sofa. Then it sleeps."), "scene", "not one sentence"),
        (_answer(question="Find the cat."), "object", "ending with '?'"),
    ],
)
def test_answers_off_the_format_are_refused_with_a_reason(
    text: str, needle_type: str, why: str
) -> None:
    with pytest.raises(AnswerFormatError, match=why.replace("[", r"\[").replace("?", r"\?")):
        parse_writer_answer(text, needle_type=needle_type)  # type: ignore[arg-type]


def test_things_that_merely_look_like_markings_are_allowed() -> None:
    for description in ("a red box on the kitchen table", "the gilded picture frame",
                        "a boxer in a red outfit"):
        answer = parse_writer_answer(_answer(description=description), needle_type="object")
        assert answer.description == description
    scene_answer = parse_writer_answer(
        _answer(description="A man in a grey coat reads a newspaper on a park bench."),
        needle_type="scene")
    assert scene_answer.description.endswith("bench.")


def test_fit_answers() -> None:
    assert parse_fit_answer('{"fits": true, "why": "a white cat sits there"}').fits
    fit = parse_fit_answer('```json\n{"fits": false, "why": ""}\n```')
    assert not fit.fits and fit.why == "(no reason given)"
    for bad, why in (('{"fits": "yes", "why": "x"}', "'fits' is str"),
                     ('{"why": "x"}', "lacks 'fits'"), ("yes", "no JSON object")):
        with pytest.raises(AnswerFormatError, match=why):
            parse_fit_answer(bad)
    assert extract_json_object('a {"b": {"c": 1}} d') == {"b": {"c": 1}}


def test_even_pick_spreads_and_keeps_time_order() -> None:
    frames = [Keyframe(float(t), solid("grey", width=8, height=8)) for t in (5, 1, 3, 2, 4, 0)]
    assert [k.t_s for k in even_pick(frames, 3)] == [0.0, 2.0, 5.0]
    assert [k.t_s for k in even_pick(frames, 1)] == [3.0]
    assert [k.t_s for k in even_pick(frames, 10)] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_marked_frames_draw_the_nearest_box_on_copies() -> None:
    sc = scene(0, 0.0, 8.0)
    cat = track(sc, 0, "cat", every_s=2.0)  # boxes at 0, 2, 4, 6 s
    frames = [Keyframe(t, solid("blue")) for t in (0.5, 3.5, 7.9)]
    marked = marked_frames(frames, cat, count=4, max_gap_s=1.0)
    assert [k.t_s for k in marked] == [0.5, 3.5]  # 7.9 s is 1.9 s from the last box
    assert all(has_red_outline(k.image, BOX) for k in marked)
    assert not has_red_outline(frames[0].image, BOX)  # the caller's frame is untouched
    with pytest.raises(NoFrames, match=r"within 0\.1 s of a box of object"):
        marked_frames(frames, cat, count=4, max_gap_s=0.1)
    assert np.array_equal(marked[0].image[0, 0], [0, 0, 255])  # outside the box: unchanged
