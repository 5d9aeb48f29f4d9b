"""Scene tag rows an older needleforge stored under both models' names joined
(``"<tagger>+<detector>"``, versions likewise) name the one model that gave each tag once
the store is opened for writing, as a fresh represent names it.

Bad inputs tried: joined rows whose tagger and detector versions both hold ``+`` (as the
embedded ones do), a tag the detector gave (a track of the label at exactly the kept score,
its label spaced and cased differently) beside ones the tagger gave, rows of other sources
(a measured shot word) that must not change, a store with no object row at all (nothing to
tell the halves apart: left as they are), and a read-only open (changes nothing).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from needleforge.records import Representation, SceneTag
from needleforge.store import Store
from tests.nemo.nemo_cases import corpus
from tests.stages.test_represent_stage import clips, ingest_clips

__all__ = ["clips"]  # the module-scoped clip fixture, shared with the stage tests

DETECTOR = ("ssd", "ov-2024.1+active-picture+input-scale-2")
TAGGER = ("eff", "lite3-int8+openpibo-1.0")
JOINED = (f"{TAGGER[0]}+{DETECTOR[0]}", f"{TAGGER[1]}+{DETECTOR[1]}")


def rows(db: Path, *, read_only: bool = False) -> dict[tuple[str, str], tuple[str, str]]:
    """``(scene_id, tag) → (backend, model_version)`` of every scene tag row."""
    with Store(db, read_only=read_only) as store:
        return {(t.scene_id, t.tag): (t.backend, t.model_version) for t in store.scene_tags()}


def old_store(db: Path, *, with_objects: bool = True) -> dict[str, str]:
    """The NeMo test corpus stored as an older represent wrote it: object rows under the
    detector's name, every merged tag row joined, one measured shot word apart. The cat and
    cup tags have their tracks' scores (the detector gave them; ``" Cat "`` is how the track
    spells its label); the rest are the tagger's, the dog's too (its track scored less).
    Returns
    ``scene_id → tag`` of the detector's rows."""
    case = corpus()
    cat, cup = case.objects[0], case.objects[1]
    objects = [dataclasses.replace(o, backend=DETECTOR[0], model_version=DETECTOR[1],
                                   tag=" Cat " if o is cat else o.tag)
               for o in case.objects] if with_objects else []
    detector_gave = {cat.scene_id: "cat", cup.scene_id: "cup"}
    tags = [SceneTag(t.scene_id, t.tag, cat.mean_score if detector_gave.get(t.scene_id)
                     == t.tag else t.score, *JOINED) for t in case.tags]
    assert {(t.scene_id, t.tag) for t in tags} >= set(detector_gave.items())
    tags.append(SceneTag(case.scenes[0].scene_id, "black-and-white", 1.0, "measure-palette",
                         "1"))
    with Store(db) as store:
        store.upsert_videos([case.video])
        store.record_representation(Representation(
            video_id=case.video.video_id, scenes=tuple(case.scenes), tags=tuple(tags),
            objects=tuple(objects), scene_detector="tests", config_hash="tests-tests"))
    return detector_gave


def test_joined_rows_name_the_model_that_gave_each_tag(tmp_path: Path) -> None:
    db = tmp_path / "nf.duckdb"
    detector_gave = old_store(db)
    # written after that open's mend: joined, as an older needleforge left them
    before = rows(db, read_only=True)
    assert sum(source == JOINED for source in before.values()) == len(before) - 1
    mended = rows(db)
    for (scene_id, tag), source in mended.items():
        if tag == "black-and-white":
            assert source == ("measure-palette", "1")
        elif detector_gave.get(scene_id) == tag:
            assert source == DETECTOR, (scene_id, tag)
        else:
            assert source == TAGGER, (scene_id, tag)
    assert set(mended) == set(before)
    assert rows(db) == mended  # a second open finds nothing left to mend


def test_joined_rows_with_no_detector_row_anywhere_are_left_as_they_are(
    tmp_path: Path,
) -> None:
    db = tmp_path / "nf.duckdb"
    old_store(db, with_objects=False)
    before = rows(db, read_only=True)
    assert rows(db) == before and JOINED in before.values()


@pytest.mark.slow
def test_a_mended_store_holds_what_a_fresh_represent_writes(clips: Path,
                                                             tmp_path: Path) -> None:
    """A real clip represented now, its tag rows joined as an older needleforge wrote them,
    the store opened again for writing: each row names the same model as before."""
    from needleforge.cli import app

    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4"}], db)
    result = CliRunner().invoke(app, ["represent", "--db", str(db)])
    assert result.exit_code == 0, result.output
    fresh = rows(db)
    with Store(db, read_only=True) as store:
        [detector] = {(o.backend, o.model_version) for o in store.objects()}
    [tagger] = {s for s in fresh.values() if s[0] == "embedded-efficientnet-lite3-int8"}
    assert detector in fresh.values()
    joined = (f"{tagger[0]}+{detector[0]}", f"{tagger[1]}+{detector[1]}")
    with Store(db) as store, store.transaction() as con:
        con.execute("UPDATE scene_tags SET backend = ?, model_version = ? WHERE backend IN "
                    "(?, ?)", [*joined, tagger[0], detector[0]])
    assert joined in rows(db, read_only=True).values()
    assert rows(db) == fresh
