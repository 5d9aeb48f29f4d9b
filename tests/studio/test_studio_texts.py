"""The text outputs: manifest.yaml, SRT sidecars and ground_truth.json are well-formed and agree."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

import av
import pytest
import yaml
from studio_helpers import packet_s

from needleforge.errors import StudioError
from needleforge.records import Authorization, Box
from needleforge.scenes.subtitles import Cue
from needleforge.studio import StudioReport
from needleforge.studio.subtitles import format_srt, srt_timestamp

_SRT_BLOCK = re.compile(
    r"(?P<n>\d+)\n"
    r"(?P<start>\d\d:\d\d:\d\d,\d\d\d) --> (?P<end>\d\d:\d\d:\d\d,\d\d\d)\n"
    r"(?P<text>[^\n]+(?:\n[^\n]+)*)"
)


def _seconds(stamp: str) -> float:
    hours, minutes, rest = stamp.split(":")
    secs, millis = rest.split(",")
    return int(hours) * 3600 + int(minutes) * 60 + int(secs) + int(millis) / 1000


def _parse_srt(text: str) -> list[Cue]:
    assert text.endswith("\n") and not text.endswith("\n\n\n")
    cues = []
    for number, block in enumerate(text.strip("\n").split("\n\n"), start=1):
        match = _SRT_BLOCK.fullmatch(block)
        assert match, block
        assert int(match["n"]) == number
        cues.append(Cue(_seconds(match["start"]), _seconds(match["end"]), match["text"]))
    return cues


def _manifest(built: StudioReport) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(built.manifest_path.read_text(encoding="utf-8"))
    return data


def test_manifest_parses_and_lists_every_file(built: StudioReport) -> None:
    manifest = _manifest(built)
    assert manifest["version"] == 1
    rows = manifest["sources"]
    listed = {row["path"] for row in rows} | {
        row["subtitles"] for row in rows if "subtitles" in row
    }
    on_disk = {
        p.relative_to(built.out_dir).as_posix()
        for p in built.out_dir.rglob("*")
        if p.is_file() and p not in (built.manifest_path, built.ground_truth_path)
    }
    assert listed == on_disk
    fields = ["path", "program", "title", "rights_holder", "licence_id", "scope", "valid_until"]
    for row in rows:
        assert list(row)[:7] == fields
        assert set(row) <= {*fields, "published_at", "subtitles"}
        assert isinstance(row["valid_until"], dt.date)
        Authorization(
            rights_holder=row["rights_holder"],
            licence_id=row["licence_id"],
            scope=tuple(row["scope"]),
            valid_until=row["valid_until"],
            published_at=row.get("published_at"),
        )


def test_manifest_records_rights_and_the_refused_rows(built: StudioReport) -> None:
    rows = {row["path"]: row for row in _manifest(built)["sources"]}
    bunny = rows["clips/bigbuckbunny.mp4"]
    assert (bunny["rights_holder"], bunny["licence_id"]) == ("Blender Foundation", "CC-BY-3.0")
    assert rows["clips/city.mpg"]["licence_id"] == "CC0-1.0"
    assert rows["clips/bikes.mp4"]["licence_id"] == "BSD-3-Clause"
    episode = rows["programs/tiny/tiny-e01.mp4"]
    assert episode["licence_id"] == "needleforge-sample-1.0"
    assert episode["subtitles"] == "programs/tiny/tiny-e01.srt"
    today = dt.date(2026, 6, 1)
    refused = {
        path
        for path, row in rows.items()
        if row["valid_until"] < today or "benchmark" not in row["scope"]
    }
    assert refused == {r.path for r in built.refused}
    by_reason = {r.reason: r.path for r in built.refused}
    assert rows[by_reason["expired"]]["valid_until"] == dt.date(2020, 1, 1)
    assert rows[by_reason["out_of_scope"]]["scope"] == ["research"]
    text = built.manifest_path.read_text(encoding="utf-8")
    assert text.count("# REFUSED BY DESIGN") == 2


def test_srt_is_well_formed_and_matches_the_ground_truth(
    built: StudioReport, truth: dict[str, Any]
) -> None:
    for video in truth["videos"]:
        if video["subtitles"] is None:
            continue
        cues = _parse_srt((built.out_dir / video["subtitles"]).read_text(encoding="utf-8"))
        expected = [Cue(**c) for scene in video["scenes"] for c in scene["subtitles"]]
        assert cues == expected
        assert cues
        for scene in video["scenes"]:
            for cue in scene["subtitles"]:
                assert scene["start_s"] < cue["start_s"] < cue["end_s"] < scene["end_s"]
        assert all(a.end_s < b.start_s for a, b in itertools.pairwise(cues))


def test_ffmpeg_reads_the_srt_the_same_way(built: StudioReport) -> None:
    path = built.subtitle_paths[0]
    cues = _parse_srt(path.read_text(encoding="utf-8"))
    with av.open(str(path)) as container:
        stream = container.streams.subtitles[0]
        packets = [p for p in container.demux(stream) if p.pts is not None]
        times = [
            (packet_s(p.pts, stream.time_base), packet_s(p.pts + p.duration, stream.time_base))
            for p in packets
            if p.pts is not None and p.duration is not None
        ]
    assert times == [(c.start_s, c.end_s) for c in cues]


def test_srt_timestamps() -> None:
    assert srt_timestamp(0) == "00:00:00,000"
    assert srt_timestamp(3723.0456) == "01:02:03,046"
    assert format_srt([Cue(1.5, 2.0, 'Note: "50%" — さあ')]) == (
        '1\n00:00:01,500 --> 00:00:02,000\nNote: "50%" — さあ\n'
    )
    with pytest.raises(StudioError, match="must be finite"):
        srt_timestamp(-1.0)


def test_ground_truth_is_consistent(truth: dict[str, Any]) -> None:
    assert truth["version"] == 1 and truth["seed"] == 7
    assets = {a["id"] for a in truth["assets"]}
    for video in truth["videos"]:
        scenes = video["scenes"]
        assert scenes[0]["start_s"] == 0 and scenes[-1]["end_s"] == video["duration_s"]
        assert [s["start_s"] for s in scenes[1:]] == video["cuts_s"]
        assert all(a["end_s"] == b["start_s"] for a, b in itertools.pairwise(scenes))
        assert {s["background"] for s in scenes} <= assets
        for obj in video["objects"]:
            scene = scenes[obj["scene_index"]]
            assert scene["start_s"] <= obj["start_s"] < obj["end_s"] <= scene["end_s"]
            assert obj["visible_s"] == pytest.approx(obj["end_s"] - obj["start_s"])
            start, end = Box(*obj["box_start"]), Box(*obj["box_end"])
            assert obj["mean_area_frac"] == pytest.approx(start.area, abs=1e-5)
            assert (start.w, start.h) == (end.w, end.h)
            assert obj["label"] in {"person", "cat", "cup", "motorcycle"}
            assert obj["source_image"] in assets
