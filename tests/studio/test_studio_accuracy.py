"""Scoring representations against the studio truth: hand-worked cases, then one real run.

The hand-worked cases pin the conventions of :mod:`needleforge.studio.accuracy` (tolerance
boundary, one-to-one matching and its tie-break, empty cases, label and time-overlap edges,
scene correspondence across missed and false cuts). The integration test builds a tiny
corpus, represents it with the real embedded models and checks the cuts come out exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.backends import default_registry
from needleforge.errors import StudioError
from needleforge.ingest import ingest
from needleforge.params import IngestParams, ObjectParams, ProgramParams, SceneParams, StudioParams
from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    Scene,
    TimedBox,
    object_id_for,
    scene_id_for,
)
from needleforge.stages.represent_video import load_models, represent_video
from needleforge.studio import build_studio
from needleforge.studio.accuracy import (
    CutScore,
    PresenceScore,
    TruthObject,
    TruthScene,
    cut_accuracy,
    load_truth,
    object_presence,
    predicted_cuts,
    scene_correspondence,
    score_representation,
)

VIDEO = "vtest"
BOX = Box(0.1, 0.1, 0.3, 0.3)

# -- cuts ----------------------------------------------------------------------------------


def test_exact_tolerance_boundary_matches_and_one_frame_more_does_not() -> None:
    # 25 fps: 2 frames = 0.08 s. 2.08 - 2.0 is 2.0000000000000018 frames in floats.
    assert cut_accuracy([2.08], [2.0], fps=25, tolerance_frames=2).tp == 1
    beyond = cut_accuracy([2.12], [2.0], fps=25, tolerance_frames=2)
    assert (beyond.tp, beyond.fp, beyond.fn) == (0, 1, 1)
    assert beyond.missed_s == (2.0,) and beyond.spurious_s == (2.12,)


def test_boundary_survives_six_decimal_rounding_of_stored_times() -> None:
    # 30 fps: frame 32 is 1.066667 s once rounded as ground_truth.json stores it.
    assert cut_accuracy([round(34 / 30, 6)], [round(32 / 30, 6)], fps=30).tp == 1
    assert cut_accuracy([1.0], [1.0], fps=30, tolerance_frames=0).tp == 1
    assert cut_accuracy([round(31 / 30, 6)], [1.0], fps=30, tolerance_frames=0).tp == 0


def test_one_prediction_cannot_match_two_truths() -> None:
    # Both true cuts are 1 frame from the prediction: the tie goes to the earlier true cut.
    score = cut_accuracy([1.04], [1.0, 1.08], fps=25)
    assert (score.tp, score.fp, score.fn) == (1, 0, 1)
    assert score.matches == ((1.0, 1.04),)
    assert score.missed_s == (1.08,)


def test_one_truth_cannot_absorb_two_predictions() -> None:
    score = cut_accuracy([0.96, 1.04], [1.0], fps=25)  # equal distances: earlier prediction
    assert (score.tp, score.fp, score.fn) == (1, 1, 0)
    assert score.matches == ((1.0, 0.96),)
    assert score.precision == 0.5 and score.recall == 1.0
    assert math.isclose(score.f1, 2 / 3)


def test_greedy_takes_the_closest_pair_first() -> None:
    # 1.04 is 1 frame from 1.08 and 1 frame from 1.0; 1.08 is the prediction 0 frames away.
    score = cut_accuracy([1.04, 1.08], [1.0, 1.08], fps=25)
    assert score.matches == ((1.0, 1.04), (1.08, 1.08))
    assert score.f1 == 1.0


def test_empty_cases() -> None:
    none = cut_accuracy([], [], fps=25)
    assert (none.precision, none.recall, none.f1) == (1.0, 1.0, 1.0)
    silent = cut_accuracy([], [3.0], fps=25)
    assert (silent.precision, silent.recall, silent.f1) == (1.0, 0.0, 0.0)
    noisy = cut_accuracy([3.0], [], fps=25)
    assert (noisy.precision, noisy.recall, noisy.f1) == (0.0, 1.0, 0.0)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="fps"):
        cut_accuracy([1.0], [1.0], fps=0)
    with pytest.raises(ValueError, match="tolerance_frames"):
        cut_accuracy([1.0], [1.0], fps=25, tolerance_frames=-1)
    with pytest.raises(ValueError, match="finite"):
        cut_accuracy([math.nan], [1.0], fps=25)


def test_combine_pools_counts() -> None:
    pooled = CutScore.combine([cut_accuracy([1.0], [1.0], fps=25),
                               cut_accuracy([5.0], [2.0], fps=25)])
    assert (pooled.tp, pooled.fp, pooled.fn) == (1, 1, 1)
    assert pooled.matches == ((1.0, 1.0),) and pooled.missed_s == (2.0,)


@given(
    st.lists(st.integers(0, 500), max_size=12, unique=True),  # frames of distinct cuts
    st.lists(st.integers(0, 500), max_size=12, unique=True),
    st.integers(0, 4),
)
def test_counts_add_up_and_matches_lie_within_tolerance(
    predicted: list[int], truth: list[int], tolerance: int
) -> None:
    score = cut_accuracy([f / 25 for f in predicted], [f / 25 for f in truth], fps=25,
                         tolerance_frames=tolerance)
    assert score.tp + score.fn == len(truth) and score.tp + score.fp == len(predicted)
    assert all(abs(p - t) * 25 <= tolerance + 1e-6 for t, p in score.matches)
    assert len({p for _, p in score.matches}) == score.tp  # each prediction used once
    assert 0.0 <= score.f1 <= 1.0


def test_predicted_cuts_are_scene_starts_after_the_first() -> None:
    scenes = _scenes([(0.0, 2.0), (2.0, 3.5), (3.5, 6.0)])
    assert predicted_cuts(scenes) == (2.0, 3.5)
    assert predicted_cuts(scenes[:1]) == ()


# -- objects -------------------------------------------------------------------------------


def _scenes(bounds: Sequence[tuple[float, float]]) -> list[Scene]:
    return [Scene(scene_id_for(VIDEO, i), VIDEO, i, a, b, n_frames=round((b - a) * 25))
            for i, (a, b) in enumerate(bounds)]


def _truth_scenes(bounds: Sequence[tuple[float, float]]) -> list[TruthScene]:
    return [TruthScene(i, a, b) for i, (a, b) in enumerate(bounds)]


def _object(scene_index: int, label: str, start_s: float, end_s: float, *,
            box: tuple[float, float, float, float] = (0.1, 0.1, 0.3, 0.3),
            box_end: tuple[float, float, float, float] | None = None) -> TruthObject:
    return TruthObject(
        object_id=f"o-{scene_index}-{label}-{start_s}", scene_index=scene_index, label=label,
        start_s=start_s, end_s=end_s, visible_s=end_s - start_s, box_start=box,
        box_end=box_end or box, mean_area_frac=box[2] * box[3],
    )


def _track(scene: Scene, index: int, tag: str, times: Sequence[float], *,
           box: Box = BOX) -> ObjectTrack:
    return ObjectTrack(
        object_id=object_id_for(scene.scene_id, index), scene_id=scene.scene_id, index=index,
        tag=tag, start_s=times[0], end_s=times[-1], visible_s=times[-1] - times[0],
        mean_area_frac=box.area, mean_score=0.9,
        boxes=tuple(TimedBox(t, box) for t in times),
        attributes=ObjectAttributes("red", "left", 1), referring_expression="the red thing",
        backend="test", model_version="0",
    )


def test_same_label_overlapping_track_finds_and_localizes() -> None:
    scenes = _scenes([(0.0, 6.0)])
    score = object_presence([_track(scenes[0], 0, "cat", [0.1, 1.1, 2.1])],
                            [_object(0, "cat", 0.0, 6.0)], scenes=scenes,
                            truth_scenes=_truth_scenes([(0.0, 6.0)]))
    assert score.group().recall == 1.0 and score.group().localized_recall == 1.0
    assert score.track_precision == 1.0
    assert score.outcomes[0].found_by == (object_id_for(scenes[0].scene_id, 0),)


def test_label_mismatch_is_neither_found_nor_a_correct_track() -> None:
    scenes = _scenes([(0.0, 6.0)])
    score = object_presence([_track(scenes[0], 0, "dog", [0.1, 1.1])],
                            [_object(0, "cat", 0.0, 6.0)], scenes=scenes,
                            truth_scenes=_truth_scenes([(0.0, 6.0)]))
    assert score.group().recall == 0.0
    assert (score.n_tracks, score.correct_tracks, score.track_precision) == (1, 0, 0.0)


def test_time_overlap_edges() -> None:
    """Object on screen [2, 4): a last hit at 2.0 overlaps it; a first hit at 4.0 does not."""
    scenes = _scenes([(0.0, 6.0)])
    truth = [_object(0, "cup", 2.0, 4.0)]
    touching = _track(scenes[0], 0, "cup", [1.0, 2.0])
    after = _track(scenes[0], 1, "cup", [4.0, 5.0])
    score = object_presence([touching, after], truth, scenes=scenes,
                            truth_scenes=_truth_scenes([(0.0, 6.0)]))
    assert score.outcomes[0].found_by == (touching.object_id,)
    assert score.outcomes[0].localized_by == (touching.object_id,)  # its box at 2.0 counts
    assert (score.n_tracks, score.correct_tracks) == (2, 1)


def test_localized_needs_iou_at_a_keyframe_inside_the_lifetime() -> None:
    scenes = _scenes([(0.0, 6.0)])
    # The object moves from x=0.0 to x=0.6 over [0, 6): at t=3 it is at x=0.3.
    truth = [_object(0, "person", 0.0, 6.0, box=(0.0, 0.2, 0.3, 0.3),
                     box_end=(0.6, 0.2, 0.3, 0.3))]
    assert truth[0].box_at(3.0).x == pytest.approx(0.3)
    on_it = _track(scenes[0], 0, "person", [3.0, 3.5], box=Box(0.3, 0.2, 0.3, 0.3))
    beside = _track(scenes[0], 1, "person", [3.0, 3.5], box=Box(0.55, 0.2, 0.3, 0.3))
    score = object_presence([on_it, beside], truth, scenes=scenes,
                            truth_scenes=_truth_scenes([(0.0, 6.0)]))
    assert set(score.outcomes[0].found_by) == {on_it.object_id, beside.object_id}
    assert score.outcomes[0].localized_by == (on_it.object_id,)


def test_missed_and_false_cuts_map_scenes_by_time_overlap() -> None:
    truth_scenes = _truth_scenes([(0.0, 3.0), (3.0, 6.0), (6.0, 9.0)])
    # Predicted: cut at 3.0 missed (one scene over two true ones), a false cut at 7.5.
    scenes = _scenes([(0.0, 6.0), (6.0, 7.5), (7.5, 9.0)])
    corr = scene_correspondence(truth_scenes, scenes)
    assert corr == {0: {scenes[0].scene_id}, 1: {scenes[0].scene_id},
                    2: {scenes[1].scene_id, scenes[2].scene_id}}
    truth = [_object(0, "cat", 0.0, 3.0), _object(1, "cup", 3.0, 6.0),
             _object(2, "person", 6.0, 9.0)]
    tracks = [_track(scenes[0], 0, "cat", [0.1, 1.1]), _track(scenes[0], 1, "cup", [3.1, 4.1]),
              _track(scenes[2], 0, "person", [7.6, 8.6])]
    score = object_presence(tracks, truth, scenes=scenes, truth_scenes=truth_scenes)
    assert score.group().recall == 1.0 and score.track_precision == 1.0


def test_groups_by_featured_and_label_and_combine() -> None:
    scenes = _scenes([(0.0, 10.0)])
    big = _object(0, "cat", 0.0, 5.0)  # 0.09 of the frame for 5 s: featured
    small = _object(0, "cup", 1.0, 3.0, box=(0.5, 0.5, 0.1, 0.1))
    assert big.featured and not small.featured
    score = object_presence([_track(scenes[0], 0, "cat", [0.1, 1.1])], [big, small],
                            scenes=scenes, truth_scenes=_truth_scenes([(0.0, 10.0)]))
    assert score.group(featured=True).recall == 1.0
    assert score.group(featured=False).recall == 0.0
    assert {k: g.found for k, g in score.by_label.items()} == {"cat": 1, "cup": 0}
    pooled = PresenceScore.combine([score, score])
    assert (pooled.group().n, pooled.group().found, pooled.n_tracks) == (4, 2, 2)
    empty = object_presence([], [], scenes=scenes, truth_scenes=[])
    assert (empty.group().recall, empty.track_precision) == (1.0, 1.0)


def test_object_presence_rejects_unknown_scenes() -> None:
    scenes = _scenes([(0.0, 6.0)])
    other = Scene(scene_id_for("vother", 0), "vother", 0, 0.0, 6.0, n_frames=150)
    with pytest.raises(ValueError, match="not in `scenes`"):
        object_presence([_track(other, 0, "cat", [0.1])], [], scenes=scenes,
                        truth_scenes=_truth_scenes([(0.0, 6.0)]))
    with pytest.raises(ValueError, match="scene_index 3"):
        object_presence([], [_object(3, "cat", 0.0, 1.0)], scenes=scenes,
                        truth_scenes=_truth_scenes([(0.0, 6.0)]))


# -- loading -------------------------------------------------------------------------------


def test_load_truth_errors_name_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "ground_truth.json"
    with pytest.raises(StudioError, match="cannot read"):
        load_truth(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(StudioError, match="JSON"):
        load_truth(path)
    path.write_text(json.dumps({"version": 99, "videos": []}), encoding="utf-8")
    with pytest.raises(StudioError, match="version 99"):
        load_truth(path)
    video = {"path": "a.mp4", "program": "p", "episode": 1, "fps": 25, "duration_s": 2.0,
             "cuts_s": [], "scenes": [{"index": 0, "start_s": 0.0, "end_s": 2.0}],
             "objects": [{"object_id": "o"}]}
    path.write_text(json.dumps({"version": 1, "seed": 0, "videos": [video]}), encoding="utf-8")
    with pytest.raises(StudioError, match=r"videos\[0\]\.objects\[0\]: missing 'scene_index'"):
        load_truth(path)


# -- integration: a real tiny corpus through the real represent stage ----------------------


@pytest.mark.slow
def test_tiny_corpus_cuts_are_found_exactly(tmp_path: Path) -> None:
    params = StudioParams(
        seed=0, width=320, height=180, fps=25.0, real_clips=[],
        programs=[ProgramParams(name="acc", n_videos=1, video_duration_s=15.0,
                                min_scene_s=2.0, max_scene_s=5.0, subtitles=False)],
    )
    report = build_studio(params, tmp_path / "studio")
    truth = load_truth(report.ground_truth_path)
    assert truth.seed == 0 and len(truth.videos) == 2  # the episode + the restricted clip
    result = ingest(report.manifest_path, media_dir=tmp_path / "media", params=IngestParams())
    assert len(result.videos) == 1
    models = load_models(ObjectParams(), registry=default_registry())
    video = result.videos[0]
    rep = represent_video(video, scene_params=SceneParams(), object_params=ObjectParams(),
                          models=models)
    expected = truth.video_for(video.source_path)
    assert len(expected.cuts_s) >= 2
    cuts, presence = score_representation(rep, expected)
    assert (cuts.recall, cuts.precision) == (1.0, 1.0), cuts
    everything = presence.group()
    print(f"\nobject recall {everything.recall:.2f} ({everything.found}/{everything.n}), "
          f"localized {everything.localized_recall:.2f}, "
          f"track precision {presence.track_precision:.2f} of {presence.n_tracks}")
    assert 0.0 <= everything.recall <= 1.0 and 0.0 <= presence.track_precision <= 1.0
    with pytest.raises(StudioError, match="not a synthetic video"):
        truth.video_for(report.manifest_path)
