"""``ground_truth.json``: what each synthetic video shows, where and when.

The file is computed from the same plans the renderer draws, so it is exact by construction
(to the pixel: boxes are whole-pixel positions divided by the frame size). Layout::

    {
      "version": 1,
      "seed": 0,
      "conventions": "...",                 # this paragraph, in short
      "videos": [
        {
          "path": "programs/studio-a/studio-a-e01.mp4",  # relative to the file's folder
          "program": "studio-a", "episode": 1,
          "fps": 25.0, "width": 640, "height": 360,
          "n_frames": 1500, "duration_s": 60.0,
          "subtitles": "programs/studio-a/studio-a-e01.srt",  # or null
          "cuts_s": [6.76, ...],             # start of every scene but the first
          "scenes": [
            {"index": 0, "start_s": 0.0, "end_s": 6.76,
             "start_frame": 0, "end_frame": 169,
             "background": "scikit-image:data/ihc.png", "setting": "a stained slide",
             "subtitles": [{"start_s": 0.25, "end_s": 3.13, "text": "..."}]}
          ],
          "objects": [
            {"object_id": "studio-a-e01-o000", "scene_index": 0, "label": "cup",
             "source_image": "scikit-image:data/coffee.png",
             "source_crop_px": [70, 10, 490, 395], "mirrored": false,
             "start_s": 0.0, "end_s": 6.76, "start_frame": 0, "end_frame": 169,
             "visible_s": 6.76,
             "box_start": [x, y, w, h], "box_end": [x, y, w, h],
             "mean_area_frac": 0.085}
          ]
        }
      ],
      "assets": [{"id": "scikit-image:data/coffee.png", "kind": "object", "licence": "..."}]
    }

Conventions: times in seconds; frame ``i`` is shown at ``i / fps``; intervals are half-open
``[start, end)``. Boxes are normalized ``[x, y, w, h]`` with a top-left origin. An object is
on screen for ``start_s <= t < end_s``, never overlaps another object and never leaves the
frame; its box at time ``t`` is ``box_start + (box_end - box_start) * u`` with
``u = (t - start_s) / (end_s - start_s)``, the top-left corner rounded half up to whole
pixels (``box_end`` is where it would be at ``end_s``; the last frame shown is one step
short of it). Its size is constant, so ``mean_area_frac = w * h``. Asset ids are
``<distribution>:<path inside it>``, never machine paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.scenes.subtitles import Cue
from needleforge.studio.assets import BACKDROPS, CUTOUTS
from needleforge.studio.plan import ObjectPlan, VideoPlan

VERSION = 1
_CONVENTIONS = (
    "times in seconds, frame i at i/fps, intervals [start, end); boxes normalized [x, y, w, h], "
    "top-left origin, moving linearly from box_start at start_s towards box_end at end_s "
    "(top-left rounded half up to whole pixels); objects never overlap or leave the frame"
)


def _r(value: float) -> float:
    return round(value, 6)


def video_entry(
    plan: VideoPlan,
    *,
    path: str,
    subtitles_path: str | None,
    cues: Mapping[int, Sequence[Cue]],
) -> dict[str, Any]:
    """The ground-truth record of one video (paths relative to the ground-truth file)."""
    return {
        "path": path,
        "program": plan.program,
        "episode": plan.episode,
        "fps": plan.fps,
        "width": plan.width,
        "height": plan.height,
        "n_frames": plan.n_frames,
        "duration_s": _r(plan.duration_s),
        "subtitles": subtitles_path,
        "cuts_s": [_r(plan.time_s(s.start_frame)) for s in plan.scenes[1:]],
        "scenes": [
            {
                "index": s.index,
                "start_s": _r(plan.time_s(s.start_frame)),
                "end_s": _r(plan.time_s(s.end_frame)),
                "start_frame": s.start_frame,
                "end_frame": s.end_frame,
                "background": s.backdrop.source.asset_id,
                "setting": s.backdrop.setting,
                "subtitles": [
                    {"start_s": c.start_s, "end_s": c.end_s, "text": c.text}
                    for c in cues.get(s.index, ())
                ],
            }
            for s in plan.scenes
        ],
        "objects": [_object_entry(plan, obj) for obj in plan.objects],
    }


def _object_entry(plan: VideoPlan, obj: ObjectPlan) -> dict[str, Any]:
    w, h = obj.size_px
    box_w, box_h = _r(w / plan.width), _r(h / plan.height)
    return {
        "object_id": obj.object_id,
        "scene_index": obj.scene_index,
        "label": obj.cutout.label,
        "source_image": obj.cutout.source.asset_id,
        "source_crop_px": list(obj.cutout.crop_px),
        "mirrored": obj.mirrored,
        "start_s": _r(plan.time_s(obj.start_frame)),
        "end_s": _r(plan.time_s(obj.end_frame)),
        "start_frame": obj.start_frame,
        "end_frame": obj.end_frame,
        "visible_s": _r(plan.time_s(obj.end_frame - obj.start_frame)),
        "box_start": [
            _r(obj.start_px[0] / plan.width),
            _r(obj.start_px[1] / plan.height),
            box_w,
            box_h,
        ],
        "box_end": [_r(obj.end_px[0] / plan.width), _r(obj.end_px[1] / plan.height), box_w, box_h],
        "mean_area_frac": _r(w * h / (plan.width * plan.height)),
    }


def asset_entries() -> list[dict[str, str]]:
    """Every photo the synthetic programs may use, with its licence as best known."""
    entries = [
        {"id": b.source.asset_id, "kind": "background", "licence": b.licence} for b in BACKDROPS
    ]
    entries += [
        {"id": c.source.asset_id, "kind": "object", "label": c.label, "licence": c.licence}
        for c in CUTOUTS
    ]
    return entries


def write_ground_truth(videos: list[dict[str, Any]], *, seed: int, path: Path) -> None:
    """Write the ground-truth file (UTF-8, stable key order, atomically)."""
    document = {
        "version": VERSION,
        "seed": seed,
        "conventions": _CONVENTIONS,
        "videos": videos,
        "assets": asset_entries(),
    }
    tmp = path.with_name(f"{path.name}.partial")
    tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
