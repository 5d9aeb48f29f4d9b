"""The on-screen text question, written and verified: a scene's ``text:`` tag becomes "a scene
where on-screen text reads 'JULY'", the table verifier refuses a negative whose text shows the
quote, and the looking verifier reads the quote again on frames the writer did not use and
refuses a negative on whose frames it reads the same text. Frames: statement.mp4's lower third
('President Obama statement on Iran, July 14, 2015') against PsychoPy's talking-head clip."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_scene
from needleforge.backends.writing import (
    SceneView,
    Skip,
    TargetView,
    VerifyRequest,
    WrittenNeedle,
)
from needleforge.errors import StudioError
from needleforge.records import Scene, SceneTag
from needleforge.records.base import scene_id_for
from needleforge.scenes.onscreen import TEXT_PREFIX, tag_score
from needleforge.studio.real_assets import sample_frames

VIDEO = "v" + "cd" * 8
CAPTION = ("PRESIDENTOBAMASTATEMENTONIRAN", "JULY14.2015")


def _frames(name: str, *, every: int = 25, most: int = 8) -> list[npt.NDArray[np.uint8]]:
    try:
        return sample_frames(name, every=every, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def tile(durations: list[float], *, video: str = VIDEO) -> list[Scene]:
    scenes, start = [], 0.0
    for index, duration in enumerate(durations):
        scenes.append(Scene(scene_id=scene_id_for(video, index), video_id=video, index=index,
                            start_s=start, end_s=start + duration,
                            n_frames=round(duration * 25)))
        start += duration
    return scenes


def _text(scene: Scene, *lines: str, score: float = 1.0) -> tuple[SceneTag, ...]:
    return tuple(SceneTag(scene.scene_id, f"{TEXT_PREFIX}{line}", score, "ocr", "1")
                 for line in lines)


def _written(view: TargetView) -> WrittenNeedle | Skip:
    return EmbeddedDescriber().write(view, needle_type="scene")


def test_the_writer_quotes_the_shortest_part_of_the_text() -> None:
    s = tile([6.0])[0]
    written = _written(TargetView(s, _text(s, *CAPTION), (), None))
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A scene where on-screen text reads 'JULY'."
    assert "on-screen text reads 'JULY'" in written.question
    # Text a viewer reads in most of the video tells nothing apart: the next part is used.
    common = frozenset({f"{TEXT_PREFIX}breaking news july"})
    written = _written(TargetView(s, _text(s, *CAPTION), (), None, common_terms=common))
    assert isinstance(written, WrittenNeedle)
    assert "on-screen text reads 'JULY 14'" in written.description


@pytest.mark.parametrize("lines", [(), ("PRESIDENTOBAMASTATEMENTONIRAN",), ("104", "2015")])
def test_no_text_question_without_a_part_to_quote(lines: tuple[str, ...]) -> None:
    """No text tag (the reader found nothing legible), a merged run too long to read as
    written, digits alone: the scene has no text question (and here nothing else)."""
    s = tile([6.0])[0]
    written = _written(TargetView(s, _text(s, *lines), (), None))
    assert isinstance(written, Skip), written


def test_no_text_question_from_text_read_once() -> None:
    s = tile([6.0])[0]
    once = _written(TargetView(s, _text(s, *CAPTION, score=tag_score(1)), (), None))
    assert isinstance(once, Skip), once
    twice = _written(TargetView(s, _text(s, *CAPTION, score=tag_score(2)), (), None))
    assert isinstance(twice, WrittenNeedle)


def _request(target: list, negatives: list[list], *, target_text: tuple[str, ...] = CAPTION,
             negative_text: tuple[tuple[str, ...], ...] | None = None,
             quote: str = "JULY", video: str = VIDEO) -> VerifyRequest:
    """Frames are cached per scene id and time, so each request with other frames is of
    another ``video``."""
    scenes = tile([6.0, *([6.0] * len(negatives))], video=video)

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        # 0.5, 1.2, 1.9 ... s into the scene: never on the 1 fps keyframe clock (0.1 + k).
        return tuple(Keyframe(scenes[index].start_s + 0.5 + 0.7 * k, image)
                     for k, image in enumerate(images))

    texts = negative_text or tuple(() for _ in negatives)
    view = TargetView(scenes[0], _text(scenes[0], *target_text), (), None, keyframes(0, target))
    views = tuple(SceneView(scene, _text(scene, *lines), (), keyframes(i + 1, images))
                  for i, (scene, images, lines) in enumerate(zip(scenes[1:], negatives, texts,
                                                                  strict=True)))
    return VerifyRequest("scene", f"A scene where on-screen text reads '{quote}'.",
                         f"When is there a scene where on-screen text reads '{quote}'?",
                         view, views)


def test_the_table_verifier_refuses_a_negative_with_the_same_text() -> None:
    passed = verify_scene(_request([], [[], []], negative_text=(("EXIT",), ())))
    assert passed.passed and "text JULY" in passed.reason, passed.reason
    # The same caption read with its spaces and comma: still the same text.
    same = verify_scene(_request([], [[], []], negative_text=(("EXIT",), ("July 14, 2015",))))
    assert not same.passed and "also shows text 'July 14, 2015'" in same.reason
    missing = verify_scene(_request([], [[]], target_text=("EXIT",)))
    assert not missing.passed and "does not show 'JULY'" in missing.reason
    request = _request([], [[]])
    other = VerifyRequest("scene", request.description, "When is the scene about July?",
                          request.target, request.negatives)
    assert not verify_scene(other).passed


@pytest.fixture(scope="module")
def verifier() -> LookingVerifier:
    return LookingVerifier()


def test_the_looking_verifier_reads_the_text_again(verifier: LookingVerifier) -> None:
    statement, talk = _frames("statement", every=12, most=10), _frames("talk", most=6)
    caption, before = statement[5:9], statement[:3]
    good = verifier.verify(_request(caption, [talk[:3], talk[3:]]))
    assert good.passed, good.reason
    assert "reread-text" in good.reason
    # The tables say the text is there; the frames do not show it.
    wrong = verifier.verify(_request(talk[:3], [before], video="v" + "01" * 8))
    assert not wrong.passed and "reread-text" in wrong.reason, wrong.reason
    # A negative whose frames show the caption, though its tables hold no text.
    shown = verifier.verify(_request(caption[:2], [talk[:3], caption[2:]],
                                     video="v" + "02" * 8))
    assert not shown.passed and "negative-text" in shown.reason, shown.reason
    blind = verifier.verify(_request(caption, [[]], video="v" + "03" * 8))
    assert not blind.passed and "no frames to look at" in blind.reason
