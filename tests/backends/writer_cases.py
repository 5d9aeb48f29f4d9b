"""Hand-built targets with keyframes, and a chat server that answers by looking at the request.

The model-backed writers need views whose keyframes lie near the target object's boxes; these
builders make them from solid-colour frames (a colour per scene), so a test can decode what
was sent and check the drawn box, and a scripted "model" can tell clips apart by colour.

:class:`RespondingServer` is the protocol server of :mod:`tests.backends.openai_stub_server`
with one addition: once its scripted queue is empty it answers through ``responder`` (the
request body in, the answer text out) instead of echoing, which lets a whole ``generate()``
run talk to a deterministic model that reads the prompt and the pixels.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.backends.writing import SceneView, TargetView
from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    Scene,
    SceneTag,
    TimedBox,
    object_id_for,
    scene_id_for,
)
from tests.backends.openai_stub_server import ChatStubServer, Reply, answer

VIDEO_ID = "v" + "0" * 15
#: The box every test object sits in (normalized).
BOX = Box(x=0.25, y=0.25, w=0.5, h=0.5)
#: Solid colours the frames are painted with, and their names.
PALETTE: dict[str, tuple[int, int, int]] = {
    "blue": (0, 0, 255), "green": (0, 160, 0), "yellow": (255, 255, 0),
    "purple": (128, 0, 128), "grey": (128, 128, 128), "orange": (255, 150, 0),
}


def scene(index: int, start_s: float, end_s: float, *, subtitle: str = "") -> Scene:
    return Scene(scene_id=scene_id_for(VIDEO_ID, index), video_id=VIDEO_ID, index=index,
                 start_s=start_s, end_s=end_s, n_frames=int((end_s - start_s) * 25),
                 subtitle_text=subtitle)


def track(sc: Scene, index: int, label: str, *, expression: str = "", every_s: float = 0.5,
          box: Box = BOX) -> ObjectTrack:
    """An object in ``box`` for the whole scene, with a box every ``every_s`` seconds."""
    times = np.arange(sc.start_s, sc.end_s - 1e-9, every_s)
    return ObjectTrack(
        object_id=object_id_for(sc.scene_id, index), scene_id=sc.scene_id, index=index,
        tag=label, start_s=sc.start_s, end_s=float(times[-1]),
        visible_s=float(times[-1]) - sc.start_s, mean_area_frac=box.area, mean_score=0.9,
        boxes=tuple(TimedBox(float(t), box) for t in times),
        attributes=ObjectAttributes(colour="white", position="centre", size_rank=1),
        referring_expression=expression or f"the {label}", backend="test", model_version="1")


def tag(sc: Scene, name: str, score: float = 0.9) -> SceneTag:
    return SceneTag(sc.scene_id, name, score, "test", "1")


def solid(colour: str, *, width: int = 160, height: int = 90) -> RGBImage:
    return np.full((height, width, 3), PALETTE[colour], dtype=np.uint8)


def keyframes(sc: Scene, colour: str, *, count: int = 6) -> tuple[Keyframe, ...]:
    """``count`` solid frames evenly inside ``sc``."""
    step = sc.duration_s / count
    return tuple(Keyframe(sc.start_s + (k + 0.5) * step, solid(colour)) for k in range(count))


def target_view(*, colour: str = "blue", label: str | None = "cat",
                subtitle: str = "") -> TargetView:
    """Scene 0 (0–8 s) painted ``colour``, tagged cat/sofa, with a ``label`` object target
    (None: a scene target)."""
    sc = scene(0, 0.0, 8.0, subtitle=subtitle)
    objects = (track(sc, 0, label, expression=f"the white {label}"),) if label else ()
    return TargetView(sc, (tag(sc, "cat"), tag(sc, "sofa", 0.7)), objects,
                      objects[0] if objects else None, keyframes(sc, colour))


def negative_view(index: int, colour: str) -> SceneView:
    """Scene ``index`` (8 s long, after the target) painted ``colour``, tagged street."""
    sc = scene(index, 8.0 * index, 8.0 * index + 8.0)
    return SceneView(sc, (tag(sc, "street"),), (), keyframes(sc, colour))


def decode_data_url(url: str) -> RGBImage:
    head, data = url.split(",", 1)
    assert head.startswith("data:image/jpeg;base64")
    with Image.open(io.BytesIO(base64.b64decode(data))) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


def request_images(body: Any) -> list[RGBImage]:
    """Every image of a chat-completions request body, decoded, in order."""
    images = []
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else ():
            if part["type"] == "image_url":
                images.append(decode_data_url(part["image_url"]["url"]))
    return images


def request_prompt(body: Any) -> str:
    """The last text part of the last message: our prompt."""
    parts = body["messages"][-1]["content"]
    return str([p["text"] for p in parts if p["type"] == "text"][-1])


def has_red_outline(image: RGBImage, box: Box = BOX) -> bool:
    """True when the pixels along ``box``'s edges are much redder than the background (the
    median pixel) and its centre is not.

    "Redder" is measured as closeness to pure red: JPEG's halved colour resolution blends a
    thin red line with its background (purple on blue, brown on green), so fixed thresholds
    on the channels would miss it.
    """
    height, width = image.shape[:2]
    left, top = round(box.x * width), round(box.y * height)
    right, bottom = round((box.x + box.w) * width) - 1, round((box.y + box.h) * height) - 1
    red = np.array([255.0, 0.0, 0.0])
    background = np.median(image.reshape(-1, 3), axis=0)
    gap = float(np.linalg.norm(background - red))

    def reddened(pixels: np.ndarray) -> np.ndarray:
        px = pixels.astype(float).reshape(-1, 3)
        return np.asarray(np.linalg.norm(px - red, axis=1) < gap - 80)

    edges = np.concatenate([image[top, left:right], image[bottom, left:right],
                            image[top:bottom, left], image[top:bottom, right]])
    centre = image[(top + bottom) // 2, (left + right) // 2]
    return bool(reddened(edges).mean() > 0.9) and not bool(reddened(centre)[0])


def colour_name(image: RGBImage) -> str:
    """The palette colour closest to the image's median pixel (the red outline is thin)."""
    median = np.median(image.reshape(-1, 3), axis=0)
    return min(PALETTE, key=lambda name: float(np.sum((median - PALETTE[name]) ** 2)))


class RespondingServer(ChatStubServer):
    """A chat server whose unscripted answers come from ``responder(request_body)``."""

    def __init__(self, responder: Callable[[Any], str]) -> None:
        super().__init__()
        self.responder = responder

    def _reply(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        reply = super()._reply(path, headers, body)
        if reply == answer():  # the server's default echo: let the responder speak instead
            return answer(self.responder(body))
        return reply
