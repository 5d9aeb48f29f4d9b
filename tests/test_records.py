"""Records validate themselves and round-trip through dicts."""

from __future__ import annotations

import datetime as dt

import pytest

from needleforge.records import Authorization, Box, MediaInfo, Scene, scene_id_for


def test_authorization_checks_and_roundtrip() -> None:
    auth = Authorization(rights_holder="R", licence_id="CC0", scope=("benchmark", "research"),
                         valid_until=dt.date(2030, 1, 1), published_at=dt.date(2020, 5, 1))
    assert Authorization.from_dict(auth.to_dict()) == auth
    assert auth.to_dict()["valid_until"] == "2030-01-01"
    assert auth.is_valid_on(dt.date(2030, 1, 1)) and not auth.is_valid_on(dt.date(2030, 1, 2))
    assert auth.missing_scopes(("benchmark", "commercial")) == ("commercial",)
    with pytest.raises(ValueError, match="licence_id must not be empty"):
        Authorization(rights_holder="R", licence_id=" ", scope=("b",),
                      valid_until=dt.date(2030, 1, 1))
    with pytest.raises(ValueError, match="unknown fields"):
        Authorization.from_dict({**auth.to_dict(), "owner": "x"})


def test_media_and_scene_validation() -> None:
    with pytest.raises(ValueError, match="fps = 0"):
        MediaInfo(duration_s=1, fps=0, width=2, height=2, video_codec="h264", n_frames=1)
    with pytest.raises(ValueError, match="rotation_deg = 45"):
        MediaInfo(duration_s=1, fps=1, width=2, height=2, video_codec="h264", n_frames=1,
                  rotation_deg=45)
    scene = Scene(scene_id=scene_id_for("vabc", 3), video_id="vabc", index=3, start_s=1.0,
                  end_s=2.5, n_frames=10)
    assert scene.scene_id == "vabc-s0003" and scene.duration_s == 1.5
    with pytest.raises(ValueError, match=r"end_s = 1\.0 must be > start_s = 1\.0"):
        Scene(scene_id="vabc-s0000", video_id="vabc", index=0, start_s=1.0, end_s=1.0,
              n_frames=0)


def test_box_iou() -> None:
    a = Box(0.0, 0.0, 0.5, 0.5)
    assert a.iou(a) == 1.0
    assert a.iou(Box(0.5, 0.5, 0.5, 0.5)) == 0.0
    assert a.iou(Box(0.25, 0.0, 0.5, 0.5)) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="inside the unit frame"):
        Box(0.8, 0.0, 0.5, 0.5)
