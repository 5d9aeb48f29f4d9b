"""Read and write the video representation: scenes, scene tags, objects and their boxes.

A video's representation is replaced as one unit inside the caller's transaction (delete the
old rows, insert the new), so a rerun never mixes the output of two configurations and never
duplicates rows. Box rows go in as one Arrow table: thousands of rows per video.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import duckdb
import pyarrow as pa

from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    Representation,
    Scene,
    SceneTag,
    TimedBox,
)
from needleforge.store.checks import delete_scans_of_video

_SCENES_OF = "SELECT scene_id FROM scenes WHERE video_id = ?"
_OBJECT_COLUMNS = (
    "object_id, scene_id, idx, tag, start_s, end_s, visible_s, mean_area_frac, mean_score, "
    "referring_expression, colour, position, size_rank, attributes, backend, model_version"
)


def replace_representation(con: duckdb.DuckDBPyConnection, rep: Representation) -> None:
    """Swap in ``rep`` for its video. Call inside a transaction."""
    vid = rep.video_id
    delete_scans_of_video(con, vid)  # the probe's scans name the scenes replaced here
    con.execute(f"DELETE FROM object_boxes WHERE object_id IN (SELECT object_id FROM objects "
                f"WHERE scene_id IN ({_SCENES_OF}))", [vid])
    con.execute(f"DELETE FROM objects WHERE scene_id IN ({_SCENES_OF})", [vid])
    con.execute(f"DELETE FROM scene_tags WHERE scene_id IN ({_SCENES_OF})", [vid])
    con.execute("DELETE FROM scenes WHERE video_id = ?", [vid])
    con.execute("DELETE FROM representations WHERE video_id = ?", [vid])
    con.executemany(
        "INSERT INTO scenes VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(s.scene_id, s.video_id, s.index, s.start_s, s.end_s, s.n_frames, s.subtitle_text)
         for s in rep.scenes],
    )
    if rep.tags:
        con.executemany(
            "INSERT INTO scene_tags VALUES (?, ?, ?, ?, ?)",
            [(t.scene_id, t.tag, t.score, t.backend, t.model_version) for t in rep.tags],
        )
    if rep.objects:
        con.executemany(f"INSERT INTO objects ({_OBJECT_COLUMNS}) VALUES "
                        f"({', '.join('?' * 16)})", [_object_row(o) for o in rep.objects])
        boxes = _boxes_table(rep.objects)  # noqa: F841 - read by name in the SQL below
        con.execute("INSERT INTO object_boxes SELECT * FROM boxes")
    con.execute(
        "INSERT INTO representations VALUES (?, ?, ?, ?, ?, ?)",
        [vid, len(rep.scenes), len(rep.objects), rep.scene_detector, rep.config_hash,
         rep.decode_error],
    )


def _object_row(o: ObjectTrack) -> tuple[Any, ...]:
    a = o.attributes
    return (
        o.object_id, o.scene_id, o.index, o.tag, o.start_s, o.end_s, o.visible_s,
        o.mean_area_frac, o.mean_score, o.referring_expression, a.colour, a.position,
        a.size_rank, json.dumps(a.to_dict(), sort_keys=True), o.backend, o.model_version,
    )


def _boxes_table(objects: Iterable[ObjectTrack]) -> pa.Table:
    cols: dict[str, list[Any]] = {k: [] for k in ("object_id", "t_s", "x", "y", "w", "h")}
    for o in objects:
        for tb in o.boxes:
            cols["object_id"].append(o.object_id)
            cols["t_s"].append(tb.t_s)
            cols["x"].append(tb.box.x)
            cols["y"].append(tb.box.y)
            cols["w"].append(tb.box.w)
            cols["h"].append(tb.box.h)
    return pa.table(cols)


def split_joined_tag_sources(con: duckdb.DuckDBPyConnection) -> int:
    """Give each scene tag row an older needleforge wrote with both models joined
    (``backend = "<tagger>+<detector>"``, ``model_version = "<tagger's>+<detector's>"``) the
    one model that gave it, as :func:`needleforge.stages.represent_video._tag_source` now names it;
    returns how many rows changed. Call inside a transaction.

    The detector is known by the name and version its own object rows carry (the video's,
    else any in the store): a row is the detector's when a track of its scene has the tag
    (spaces and case folded) at exactly the row's score, else the tagger's, whose name and
    version are what the joined pair holds before ``+<detector's>``. A row no stored
    detector fits (a store holding no object at all) is left as it is: its two halves cannot
    be told apart, as versions hold ``+`` too; representing its video again rewrites it.
    """
    rows = con.execute(
        "SELECT t.scene_id, t.tag, t.score, t.backend, t.model_version, s.video_id "
        "FROM scene_tags t JOIN scenes s USING (scene_id) WHERE t.backend LIKE '%+%'"
    ).fetchall()
    if not rows:
        return 0
    detectors = _stored_detectors(con)
    tracks: dict[tuple[str, str], set[tuple[str, float]]] = defaultdict(set)
    for scene_id, name, label, mean_score in con.execute(
            "SELECT scene_id, backend, tag, mean_score FROM objects").fetchall():
        tracks[scene_id, name].add((" ".join(label.split()).lower(), mean_score))
    fixes = []
    for scene_id, tag, score, backend, version, video_id in rows:
        for name, detector_version in [*detectors.get(video_id, []), *detectors.get("", [])]:
            source = _split_source(backend, version, name, detector_version)
            if source is not None:
                if (tag, score) in tracks[scene_id, name]:
                    source = (name, detector_version)
                fixes.append((scene_id, tag, backend, *source))
                break
    taken = set(con.execute("SELECT scene_id, tag, backend FROM scene_tags").fetchall())
    fixes = [f for f in fixes if (f[0], f[1], f[3]) not in taken]
    if fixes:
        con.executemany("UPDATE scene_tags SET backend = ?, model_version = ? WHERE "
                        "scene_id = ? AND tag = ? AND backend = ?",
                        [(new, new_version, scene_id, tag, old)
                         for scene_id, tag, old, new, new_version in fixes])
    return len(fixes)


def _stored_detectors(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """``video_id → [(backend, model_version)]`` of the object rows, and under ``""`` every
    pair in the store."""
    pairs = con.execute(
        "SELECT DISTINCT s.video_id, o.backend, o.model_version FROM objects o "
        "JOIN scenes s USING (scene_id) ORDER BY ALL").fetchall()
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for video_id, name, version in pairs:
        out[video_id].append((name, version))
        if (name, version) not in out[""]:
            out[""].append((name, version))
    return out


def _split_source(backend: str, version: str, name: str, detector_version: str
                  ) -> tuple[str, str] | None:
    """The tagger's ``(name, version)`` of a joined pair whose second half is the detector
    ``(name, detector_version)``; None when the pair does not end with that detector."""
    name_tail, version_tail = f"+{name}", f"+{detector_version}"
    if not (backend.endswith(name_tail) and version.endswith(version_tail)):
        return None
    tagger, tagger_version = backend[:-len(name_tail)], version[:-len(version_tail)]
    return (tagger, tagger_version) if tagger and tagger_version else None


def config_hashes(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """``video_id → config_hash`` of every represented video (to skip finished work)."""
    return dict(con.execute("SELECT video_id, config_hash FROM representations").fetchall())


def load_scenes(con: duckdb.DuckDBPyConnection, video_id: str | None = None) -> list[Scene]:
    """Scenes ordered by video and index, of one video or all."""
    where, args = ("WHERE video_id = ?", [video_id]) if video_id else ("", [])
    rows = con.execute(
        "SELECT scene_id, video_id, idx, start_s, end_s, n_frames, subtitle_text FROM scenes "
        f"{where} ORDER BY video_id, idx", args
    ).fetchall()
    return [Scene(scene_id=r[0], video_id=r[1], index=r[2], start_s=r[3], end_s=r[4],
                  n_frames=r[5], subtitle_text=r[6]) for r in rows]


def load_scene_tags(con: duckdb.DuckDBPyConnection) -> list[SceneTag]:
    rows = con.execute("SELECT scene_id, tag, score, backend, model_version FROM scene_tags "
                       "ORDER BY scene_id, score DESC, tag").fetchall()
    return [SceneTag(*r) for r in rows]


def load_objects(con: duckdb.DuckDBPyConnection) -> list[ObjectTrack]:
    """Every object with its boxes, ordered by id."""
    boxes: dict[str, list[TimedBox]] = defaultdict(list)
    for oid, t, x, y, w, h in con.execute(
        "SELECT object_id, t_s, x, y, w, h FROM object_boxes ORDER BY object_id, t_s"
    ).fetchall():
        boxes[oid].append(TimedBox(t_s=t, box=Box(x, y, w, h)))
    rows = con.execute(f"SELECT {_OBJECT_COLUMNS} FROM objects ORDER BY object_id").fetchall()
    return [
        ObjectTrack(
            object_id=r[0], scene_id=r[1], index=r[2], tag=r[3], start_s=r[4], end_s=r[5],
            visible_s=r[6], mean_area_frac=r[7], mean_score=r[8], boxes=tuple(boxes[r[0]]),
            attributes=ObjectAttributes.from_dict(json.loads(r[13])),
            referring_expression=r[9], backend=r[14], model_version=r[15],
        )
        for r in rows
    ]
