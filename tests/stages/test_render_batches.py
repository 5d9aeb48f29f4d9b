"""The render flow's batches (:mod:`needleforge.stages.render`), without Prefect: the same plan as
``needleforge render``, encoded and joined in batches, gives the same files.

Source media: the render stage's coded source (20 s at 25 fps, 160x90, scenes cut at 6, 13.4
and 20 s; see ``tests/stages/test_render_stage.py``). Bad input tried here: two montages with
one id, refused by the plan before anything is encoded.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.errors import MediaError
from needleforge.stages.render import (
    BATCHES_PER_WORKER,
    batch_counts,
    batch_sources,
    batches,
    encode_clips,
    join_montages,
    plan_render,
)
from tests.stages.test_render_stage import PARAMS, Corpus, corpus, montage

__all__ = ["corpus"]  # the render stage's fixture


@given(st.lists(st.integers(), max_size=40), st.integers(min_value=0, max_value=8))
def test_batches_deal_every_item_once(items: list[int], workers: int) -> None:
    dealt = batches(items, workers=workers)
    assert sorted(x for batch in dealt for x in batch) == sorted(items)
    assert len(dealt) == min(len(items), max(1, workers) * BATCHES_PER_WORKER)
    assert all(dealt)  # no empty batch: one task each


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.mp4"))}


@pytest.mark.slow
def test_batches_make_what_render_montages_makes(corpus: Corpus) -> None:
    s0, s1, s2 = corpus.scene(0), corpus.scene(1), corpus.scene(2)
    montages = [montage("m-a", [(s1, 2.0, 3.0), (s0, 0.0, 2.0)]),
                montage("m-b", [(s2, 0.0, 2.0), (s1, 0.0, 3.0)])]
    videos = {corpus.video.video_id: corpus.video}
    out, cache = corpus.root / "batched", corpus.root / "batched-cache"
    plan = plan_render(montages, scenes_by_id=corpus.scenes, videos_by_id=videos, out_dir=out,
                       cache_dir=cache, params=PARAMS)
    assert [j.montage.montage_id for j in plan.todo] == ["m-a", "m-b"]
    assert len(plan.owners) == 3
    clips = [c for batch in batches(list(plan.owners), workers=2)
             for c in encode_clips(batch, cache_dir=cache, params=PARAMS)]
    joined = []
    for batch in batches([j.montage for j in plan.todo], workers=1):
        scenes, used = batch_sources(batch, scenes_by_id=corpus.scenes, videos_by_id=videos)
        assert set(scenes) == {s.scene_id for m in batch for s in m.segments}
        joined.append(join_montages(batch, scenes_by_id=scenes, videos_by_id=used,
                                    out_dir=out, cache_dir=cache, params=PARAMS))
    assert batch_counts(plan, clips, joined) == {
        "montages": 2, "rendered": 2, "skipped": 0, "clips_encoded": 3, "clips_cached": 0,
        "join_misses": 0}

    corpus.run(montages)  # render_montages, the CLI's path, into out/
    assert _digests(out) == _digests(corpus.root / "out") and len(_digests(out)) == 2
    for name in ("m-a.json", "m-b.json"):
        assert (out / name).read_text() == (corpus.root / "out" / name).read_text()
    again = plan_render(montages, scenes_by_id=corpus.scenes, videos_by_id=videos,
                        out_dir=out, cache_dir=cache, params=PARAMS)
    assert again.todo == () and again.owners == {}
    assert batch_counts(again, [], [])["skipped"] == 2


def test_the_plan_refuses_repeated_ids_before_encoding(corpus: Corpus) -> None:
    m = montage("m-a", [(corpus.scene(0), 0.0, 2.0)])
    with pytest.raises(MediaError, match=r"montage ids must be unique.*'m-a'"):
        plan_render([m, m], scenes_by_id=corpus.scenes,
                    videos_by_id={corpus.video.video_id: corpus.video},
                    out_dir=corpus.root / "o", cache_dir=corpus.root / "c", params=PARAMS)
    assert not (corpus.root / "c").exists()
