"""The Label Studio labeling config, task payloads, frame times and annotation reading
(no server: these are the pure parts; tests/review/test_labelstudio_server.py runs a real one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.params import ReviewParams
from needleforge.review import build_items, choose_items, question_key
from needleforge.review.labelstudio_project import ProjectTarget, video_url
from needleforge.review.labelstudio_pull import annotation_verdict
from needleforge.review.ls_client import LabelStudioError
from needleforge.review.ls_config import (
    CHOICES,
    LABEL_CONFIG,
    answer_ranges,
    config_differences,
    task_payload,
    to_frames,
    to_seconds,
)
from needleforge.store import Store
from tests.review.review_cases import World, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("ls-config"))


@given(st.integers(0, 20_000), st.integers(1, 5_000), st.sampled_from([10, 24, 25, 30]))
def test_spans_on_frame_bounds_survive_the_trip_through_frames(start: int, length: int,
                                                               fps: int) -> None:
    span = (start / fps, (start + length) / fps)
    frames = to_frames(span, fps)
    assert frames == (start + 1, start + length)
    assert to_seconds(frames, fps) == pytest.approx(span, abs=1e-6)


def test_frames_count_from_one_and_end_inclusive() -> None:
    # 25 fps: [3 s, 6 s) is frames 76..150 (frame 76 starts at 3.00 s, frame 150 ends at 6 s)
    assert to_frames((3.0, 6.0), 25) == (76, 150)
    assert to_seconds((76, 150), 25) == (3.0, 6.0)


def test_our_config_agrees_with_itself_whatever_the_layout() -> None:
    assert config_differences(LABEL_CONFIG) == []
    squeezed = " ".join(LABEL_CONFIG.split()).replace("> <", "><")
    assert config_differences(squeezed) == []


def test_looks_are_not_differences() -> None:
    restyled = (LABEL_CONFIG.replace('timelineHeight="200"', 'timelineHeight="120"')
                .replace('background="#2ca02c"', 'background="green"')
                .replace("Is the question right?", "Is this question right?")
                .replace('placeholder="note (optional)"', 'placeholder="a note"'))
    assert restyled != LABEL_CONFIG and config_differences(restyled) == []
    retimed = LABEL_CONFIG.replace('frameRate="$fps"', 'frameRate="25"')
    assert len(config_differences(retimed)) == 2  # what the spans are counted in: meaning


def test_a_hand_changed_config_is_described_element_by_element() -> None:
    changed = LABEL_CONFIG.replace('<Choice value="unsure"/>', '<Choice value="maybe"/>')
    diff = config_differences(changed)
    assert len(diff) == 2
    assert diff[0].startswith("missing from the project: <View> > <Choices ")
    assert diff[0].endswith('> <Choice value="unsure">')
    assert diff[1].startswith("only in the project:")
    assert diff[1].endswith('> <Choice value="maybe">')
    assert config_differences("<View><Video") [0].startswith(
        "the project's labeling config is not XML")


def test_task_payload_carries_the_question_its_key_and_prefilled_spans(world: World) -> None:
    with Store(world.db, read_only=True) as store:
        items = build_items(store.questions(), store.montages(), objects=store.objects())
    item = next(i for i in choose_items(items) if i.question_id == "q-obj")
    key = question_key(item.question, item.montage)
    task = task_payload(item, key=key, video_url="/data/local-files/?d=r/m-obj.mp4", fps=25)
    data = task["data"]
    assert data["nf_key"] == key and data["nf_question_id"] == "q-obj"
    assert data["question"] == item.question.text and data["fps"] == 25
    assert data["nf_answer_spans"] == [[3.0, 6.0]]
    regions = task["predictions"][0]["result"]
    labels = [(r["value"]["timelinelabels"][0], r["value"]["ranges"][0]["start"],
               r["value"]["ranges"][0]["end"]) for r in regions]
    # m-obj: negative 0-3 s, the kite 3-6 s, negatives 6-9 and 9-12 s
    assert labels == [("negative", 1, 75), ("negative", 151, 225), ("negative", 226, 300),
                      ("answer", 76, 150)]
    assert answer_ranges(regions, 25) == [(3.0, 6.0)]


def _annotation(choice: str | None, *, start: int = 76, end: int = 150,
                cancelled: bool = False) -> dict[str, object]:
    result: list[dict[str, object]] = [
        {"id": "a1", "from_name": "spans", "to_name": "video", "type": "timelinelabels",
         "value": {"ranges": [{"start": start, "end": end}], "timelinelabels": ["answer"]}},
        {"id": "t", "from_name": "note", "to_name": "video", "type": "textarea",
         "value": {"text": ["kite leaves at 5 s"]}}]
    if choice is not None:
        result.append({"id": "c", "from_name": "verdict", "to_name": "video",
                       "type": "choices", "value": {"choices": [choice]}})
    return {"id": 7, "result": result, "completed_by": 3, "was_cancelled": cancelled,
            "updated_at": "2026-12-05T08:00:00Z"}


TASK = {"id": 1, "data": {"nf_key": "k0123456789abcdef", "nf_question_id": "q-obj", "fps": 25,
                          "nf_answer_spans": [[3.0, 6.0]]}}


def test_an_annotation_becomes_a_verdict_with_the_judges_span() -> None:
    same = annotation_verdict(TASK, _annotation("valid"), users={3: "ann@x.org"}, ref="r1")
    assert same is not None and same.valid and same.spans_right
    assert same.answer_spans is None and same.annotator == "ann@x.org"
    assert same.note == "kite leaves at 5 s"
    moved = annotation_verdict(TASK, _annotation("wrong span", end=125), users={}, ref="r2")
    assert moved is not None and moved.valid is True and moved.spans_right is False
    assert moved.answer_spans == ((3.0, 5.0),) and moved.annotator == "user 3"
    unfixed = annotation_verdict(TASK, _annotation("wrong span"), users={}, ref="r3")
    assert unfixed is not None and unfixed.valid is False  # wrong, and no span to replace it
    unsure = annotation_verdict(TASK, _annotation("unsure"), users={}, ref="r4")
    assert unsure is not None and not unsure.judged and unsure.spans_right is None


def test_skipped_or_choiceless_annotations_are_no_verdicts_and_foreign_choices_refused() -> None:
    assert annotation_verdict(TASK, _annotation("valid", cancelled=True), users={},
                              ref="r") is None
    assert annotation_verdict(TASK, _annotation(None), users={}, ref="r") is None
    with pytest.raises(LabelStudioError, match=r"ref-9: verdict 'maybe' is not one of"):
        annotation_verdict(TASK, _annotation("maybe"), users={}, ref="ref-9")
    assert set(CHOICES) == {"valid", "wrong span", "wrong description",
                            "negative shows the target", "unsure"}


def test_videos_outside_the_servers_root_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "served"
    assert video_url(root / "render" / "m a.mp4", root) == \
        "/data/local-files/?d=render/m%20a.mp4"
    with pytest.raises(LabelStudioError, match="is not under the Label Studio server's"):
        video_url(tmp_path / "elsewhere" / "m.mp4", root)


def test_target_reads_the_environment_and_refuses_bad_values(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://10.0.0.9:8080")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "tok-123456")
    monkeypatch.setenv("LOCAL_FILES_DOCUMENT_ROOT", str(tmp_path))
    target = ProjectTarget.from_env(title="round 1")
    assert (target.url, target.token, target.media_root) == (
        "http://10.0.0.9:8080", "tok-123456", tmp_path)
    assert ProjectTarget.from_env(url="http://h:1", token="t2").url == "http://h:1"
    with pytest.raises(LabelStudioError, match="at least 3 characters"):
        ProjectTarget(url="http://h", token="t", title="ab")
    with pytest.raises(LabelStudioError, match="annotators = 0 must be >= 1"):
        ProjectTarget(url="http://h", token="t", annotators=0)


def test_params_fill_in_what_flags_and_environment_leave_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    params = ReviewParams(label_studio_url="http://review.lan:8081", project="round 7",
                          annotators=3)
    target = ProjectTarget.from_env(token="t-123456", params=params)
    assert (target.url, target.title, target.annotators) == ("http://review.lan:8081",
                                                             "round 7", 3)
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://env:1")
    flagged = ProjectTarget.from_env(url=None, token="t", title="round 8", annotators=2,
                              params=params)
    assert (flagged.url, flagged.title, flagged.annotators) == ("http://env:1", "round 8", 2)
    with pytest.raises(ValueError, match="label_studio_url"):
        ReviewParams(label_studio_url="review.lan:8081")
    with pytest.raises(ValueError, match="token"):
        ReviewParams.model_validate({"token": "secret"})  # never a parameter
