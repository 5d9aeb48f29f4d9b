"""``generate()`` end to end with the ``openai_http`` writer and verifier and real keyframes.

The video is six solid-colour 8 s shots made by ffmpeg; the tables are hand-built (tags and a
cat and a dog tracked in two shots). The "model" behind the local chat server really looks at
what it is sent: it names the colour of the frames, writes descriptions from the prompt's hint
and that colour, and says a description fits a clip when the clip's colour is in it. Shots 0
and 3 are both blue, and the montage lengths force every other shot into each montage, so
the questions about shots 0 and 3 must fail as ambiguous and all others pass.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nemo_cases import make_scene, make_video

from needleforge.backends import default_registry
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.nemo import VideoKeyframes, build_backends, generate
from needleforge.params import NemoParams
from needleforge.records import Box, Scene
from tests.backends.writer_cases import (
    PALETTE,
    RespondingServer,
    colour_name,
    has_red_outline,
    request_images,
    request_prompt,
    tag,
    track,
)

COLOURS = ("blue", "green", "yellow", "blue", "purple", "orange")
TAGS = (("cat", "sofa"), ("dog", "tree"), ("car", "street"), ("cup", "table"),
        ("bird", "bench"), ("bicycle", "park"))
OBJECT_BOX = Box(0.3, 0.3, 0.4, 0.4)


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ffmpeg -f lavfi -i color=c=0x0000FF:s=160x90:r=5:d=8`` × 6 colours, concatenated."""
    path = tmp_path_factory.mktemp("e2e") / "shots.mp4"
    inputs: list[str] = []
    for colour in COLOURS:
        rgb = "".join(f"{c:02X}" for c in PALETTE[colour])
        inputs += ["-f", "lavfi", "-i", f"color=c=0x{rgb}:s=160x90:r=5:d=8"]
    labels = "".join(f"[{i}]" for i in range(len(COLOURS)))
    subprocess.run([ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y", *inputs,
                    "-filter_complex", f"{labels}concat=n={len(COLOURS)}:v=1:a=0",
                    "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p", str(path)],
                   check=True)
    return path


class ColourModel:
    """Answers describer and verifier prompts from the frames' colour; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, bool]] = []  # (prompt kind, images, first is marked)

    def __call__(self, body: Any) -> str:
        prompt, images = request_prompt(body), request_images(body)
        colour = colour_name(images[0])
        marked = has_red_outline(images[0], OBJECT_BOX)
        if prompt.startswith("You are helping"):
            self.seen.append(("describe", len(images), marked))
            label = re.search(r'detected as "([^"]+)"', prompt)
            if label:
                thing = f"the {label.group(1)} in a {colour} room"
                return json.dumps({"skip": False, "reason": "", "description": thing,
                                   "question": f"When does {thing} appear in the video?"})
            first_tag = re.search(r'tagged "([^"]+)"', prompt)
            assert first_tag is not None
            return json.dumps({"skip": False, "reason": "",
                               "description": f"A {colour} room with a {first_tag.group(1)}.",
                               "question": f"When is the {colour} room with a "
                                           f"{first_tag.group(1)} shown in the video?"})
        self.seen.append(("verify", len(images), marked))
        match = re.search(r'Description: "([^"]+)"', prompt)
        assert match is not None
        return json.dumps({"fits": colour in match.group(1), "why": f"the clip is {colour}"})


@pytest.fixture
def model() -> Iterator[tuple[RespondingServer, ColourModel]]:
    responder = ColourModel()
    with RespondingServer(responder) as server:
        yield server, responder


def test_generate_with_the_openai_writer_records_model_text_and_verdicts(
    shots: Path, model: tuple[RespondingServer, ColourModel]
) -> None:
    server, responder = model
    video = dataclasses.replace(make_video(duration_s=48.0), stored_path=str(shots))
    scenes = [make_scene(i, 8.0 * i, 8.0 * i + 8.0) for i in range(len(COLOURS))]
    tags = [tag(s, name, 0.9 - 0.1 * k) for s, names in zip(scenes, TAGS, strict=True)
            for k, name in enumerate(names)]
    objects = [track(scenes[0], 0, "cat", box=OBJECT_BOX), track(scenes[1], 0, "dog",
                                                                  box=OBJECT_BOX)]
    options = {"base_url": server.url, "model": "e2e-vlm", "backoff_s": 0.001}
    params = NemoParams(short_min_s=45.0, short_max_s=60.0, describer="openai_http",
                        verifier="openai_http", describer_options=options,
                        verifier_options=options)
    describer, verifier = build_backends(params, registry=default_registry())
    with VideoKeyframes({video.video_id: video}, per_scene=4) as keyframes:
        result = generate(videos=[video], scenes=scenes, tags=tags, objects=objects,
                          params=params, describer=describer, verifier=verifier,
                          keyframes=keyframes)
        assert keyframes.decoded_scenes == len(scenes)  # each shot decoded once, then cached

    assert result.skipped == ()
    assert len(result.questions) == len(result.verifications) == 8  # 6 scene + 2 object
    colour_of = {s.scene_id: c for s, c in zip(scenes, COLOURS, strict=True)}
    for question, verdict in zip(result.questions, result.verifications, strict=True):
        colour = colour_of[question.target_scene_id]
        assert colour in question.description and colour in question.text
        assert question.backend == "openai-http-e2e-vlm"
        # Scene questions are the model's; object questions use our templates.
        assert question.template_id.startswith("openai/e2e-vlm/v1")
        assert (question.template_id != "openai/e2e-vlm/v1") is (question.needle_type == "object")
        assert verdict.question_id == question.question_id
        assert verdict.verifier == "openai-http-e2e-vlm"
        assert verdict.passed is (colour != "blue"), verdict.reason
        if not verdict.passed:
            assert verdict.reason.startswith("ambiguous: the description also fits negative ")
            twin = _blue_twin(question.target_scene_id, scenes)
            assert twin.scene_id in verdict.reason
    objects = [q for q in result.questions if q.needle_type == "object"]
    assert {q.description for q in objects} == {"the cat in a blue room",
                                                "the dog in a green room"}
    assert all(q.description in q.text for q in objects)
    assert len(result.releasable()) == 5
    describes = [s for s in responder.seen if s[0] == "describe"]
    assert len(describes) == 8 and all(n == 4 for _, n, _ in describes)
    assert sum(marked for kind, _, marked in describes) == 2  # the object needles only
    assert len(server.requests) == len(responder.seen)


def _blue_twin(scene_id: str, scenes: list[Scene]) -> Scene:
    blue = [s for s, c in zip(scenes, COLOURS, strict=True) if c == "blue"]
    return next(s for s in blue if s.scene_id != scene_id)
