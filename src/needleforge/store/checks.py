"""Read and write the negative check's scans (:mod:`needleforge.nemo.checks.negative_scan`).

A scan is one scene looked at by one probe configuration (``probe_key``): a row in
``negative_scans`` (how many frames) and one row per label seen in ``negative_sightings``
(the best detection: score, time, box).
"Looked at, nothing found" is a scan without sightings, which is why the two tables are
separate. Scans are facts about the source
scenes, not about any plan, so they survive montage rewrites; they are dropped with their
scenes when a video is represented again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import duckdb

from needleforge.records import Box, SceneScan, Sighting


def replace_scans(con: duckdb.DuckDBPyConnection, scans: Iterable[SceneScan]) -> int:
    """Write ``scans``, each replacing an earlier scan of its scene by the same probe; call
    inside a transaction. Returns how many were written."""
    rows = list(scans)
    for scan in rows:
        key = [scan.scene_id, scan.probe_key]
        con.execute("DELETE FROM negative_sightings WHERE scene_id = ? AND probe_key = ?", key)
        con.execute("DELETE FROM negative_scans WHERE scene_id = ? AND probe_key = ?", key)
    if rows:
        con.executemany("INSERT INTO negative_scans VALUES (?, ?, ?)",
                        [(s.scene_id, s.probe_key, s.n_frames) for s in rows])
        sightings = [(s.scene_id, s.probe_key, g.label, g.score, g.t_s, g.box.x, g.box.y,
                      g.box.w, g.box.h) for s in rows for g in s.sightings]
        if sightings:
            con.executemany("INSERT INTO negative_sightings VALUES "
                            "(?, ?, ?, ?, ?, ?, ?, ?, ?)", sightings)
    return len(rows)


def delete_scans_of_video(con: duckdb.DuckDBPyConnection, video_id: str) -> None:
    """Drop every scan of the video's scenes (its scenes are about to be replaced)."""
    scenes = "SELECT scene_id FROM scenes WHERE video_id = ?"
    con.execute(f"DELETE FROM negative_sightings WHERE scene_id IN ({scenes})", [video_id])
    con.execute(f"DELETE FROM negative_scans WHERE scene_id IN ({scenes})", [video_id])


def load_scans(con: duckdb.DuckDBPyConnection, probe_key: str | None = None) -> list[SceneScan]:
    """Stored scans (of one probe, or of all), ordered by scene id and probe key."""
    where, args = ("WHERE probe_key = ?", [probe_key]) if probe_key is not None else ("", [])
    found: defaultdict[tuple[str, str], list[Sighting]] = defaultdict(list)
    for scene_id, key, label, score, t_s, x, y, w, h in con.execute(
        f"SELECT scene_id, probe_key, label, score, t_s, x, y, w, h "
        f"FROM negative_sightings {where} ORDER BY scene_id, probe_key, label", args
    ).fetchall():
        found[(scene_id, key)].append(Sighting(scene_id, label, score, t_s,
                                               Box(x=x, y=y, w=w, h=h)))
    return [SceneScan(scene_id, key, n_frames, tuple(found.get((scene_id, key), ())))
            for scene_id, key, n_frames in con.execute(
                f"SELECT scene_id, probe_key, n_frames FROM negative_scans {where} "
                f"ORDER BY scene_id, probe_key", args).fetchall()]
