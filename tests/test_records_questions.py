"""The release question record (``needleforge.records.questions``): rows round-trip, the
Parquet schema is the one the release writes, bad rows name their field, lenient reading never
raises, and the format's constants have one owner in the source tree."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import tokenize
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from needleforge.errors import EvaluationError
from needleforge.params import NemoParams
from needleforge.records import bucket_for
from needleforge.records.questions import (
    BUCKET_LABELS,
    BUCKETS,
    CHOICE_KEYS,
    COLUMNS,
    GROUNDING_KEYS,
    LETTERS,
    LONG_MIN_S,
    N_OPTIONS,
    SHORT_MAX_S,
    ChoiceQuestion,
    GroundingQuestion,
    QuestionRecordError,
    parquet_schema,
    parse_jsonl,
    parse_question,
    read_lenient,
)
from needleforge.release import lmms_eval_utils, vlmevalkit_dataset
from needleforge.release.file_io import write_questions_parquet

SRC = Path(__file__).resolve().parents[1] / "src" / "needleforge"
OWNER = SRC / "records" / "questions.py"


def grounding(**change: Any) -> dict[str, Any]:
    row = GroundingQuestion(
        question_id="q1", family="nemo", task="object_grounding", bucket="short",
        needle_type="object", n_needles=2, question="When is the cat seen?",
        video="videos/m1.mp4", duration_s=120.5, answer_spans=((1.0, 2.5), (40.0, 44.0)),
        extra={"montage_id": "m1", "target_object_id": None, "verified_by": ["embedded/1"],
               "source_video_ids": ["vabc"]})
    return row.to_dict() | change


def choice(**change: Any) -> dict[str, Any]:
    row = ChoiceQuestion(
        question_id="s1", family="vnbench", task="ret_edit1", bucket="short",
        needle_type="subtitle_edit", n_needles=1, question="Who is named?", video="s1.mp4",
        duration_s=30.0, options=("Ann", "Bob", "Cy", "Di"), answer_index=2, try_index=1,
        extra={"needle_spans": [[3.0, 4.5]], "haystack": "vabc-t0-l30",
               "source_video_id": "vabc"})
    return row.to_dict() | change


def test_grounding_row_round_trips_in_order() -> None:
    data = grounding()
    assert list(data)[:len(GROUNDING_KEYS)] == list(GROUNDING_KEYS)
    assert list(data)[len(GROUNDING_KEYS):] == ["montage_id", "target_object_id", "verified_by",
                                                 "source_video_ids"]
    row = parse_question(json.loads(json.dumps(data)), line=1)
    assert isinstance(row, GroundingQuestion) and row.key == ("q1", None)
    assert row.answer_spans == ((1.0, 2.5), (40.0, 44.0))
    assert row.to_dict() == data and list(row.to_dict()) == list(data)
    assert GroundingQuestion.from_json(data) == row


def test_choice_row_round_trips_in_order() -> None:
    data = choice()
    assert list(data)[:len(CHOICE_KEYS)] == list(CHOICE_KEYS)
    row = parse_question(json.loads(json.dumps(data)))
    assert isinstance(row, ChoiceQuestion)
    assert (row.key, row.answer_text, row.extra["haystack"]) == (("s1", 1), "Cy", "vabc-t0-l30")
    assert row.to_dict() == data and list(row.to_dict()) == list(data)
    with pytest.raises(EvaluationError, match="is a ChoiceQuestion, not a GroundingQuestion"):
        GroundingQuestion.from_json(data, line=3)


def test_parquet_schema_is_what_the_release_writes(tmp_path: Path) -> None:
    records = [grounding(), {k: v for k, v in choice().items() if k != "source_video_id"}]
    path = tmp_path / "questions.parquet"
    write_questions_parquet(path, records)
    written = pq.read_schema(path)
    assert written.remove_metadata() == parquet_schema(records)
    assert written.names == [c for c in COLUMNS if any(c in r for r in records)]
    assert str(written.field("answer_spans").type) == "list<element: list<element: double>>"
    assert str(written.field("options").type) == "list<element: string>"
    with pytest.raises(QuestionRecordError, match=r"\['source_video_id'\] have no Parquet"):
        parquet_schema([choice()])


@pytest.mark.parametrize(("data", "field", "fragment"), [
    ({k: v for k, v in grounding().items() if k != "bucket"}, "bucket", "misses ['bucket']"),
    (grounding(duration_s="long"), "duration_s", "duration_s = 'long' must be a finite number"),
    (grounding(n_needles=True), "n_needles", "n_needles = True must be an integer >= 1"),
    (grounding(question_id=7), "question_id", "question_id = 7 must be a non-empty string"),
    (grounding(answer_spans=[[5.0, 1.0]]), "answer_spans", "answer_spans[0] = [5.0, 1.0] is "
                                                           "reversed"),
    (grounding(answer_spans=[[1.0, 200.0]]), "answer_spans", "lies outside the video"),
    (grounding(bucket="huge"), "bucket", "bucket = 'huge' must be one of"),
    (grounding(family="other"), "family", "family = 'other' must be one of"),
    (choice(answer_index=4), "answer_index", "answer_index = 4 must be an integer in 0..3"),
    (choice(**{"try": -1}), "try", "try = -1 must be an integer in 0..3"),
    (choice(options=["a", "b", "c"]), "options", "must be 4 non-empty strings"),
    (choice(options=["a", "b", "c", "A"]), "options", "must be distinct"),
    (choice(task="mystery"), "task", "must start with ret, ord or cnt"),
])
def test_bad_rows_name_path_line_and_field(data: dict[str, Any], field: str,
                                           fragment: str) -> None:
    with pytest.raises(QuestionRecordError) as info:
        parse_question(data, line=3, path="q.jsonl")
    assert info.value.field == field
    assert str(info.value).startswith(f"q.jsonl:3: question {data.get('question_id')!r}")
    assert fragment in str(info.value)
    assert isinstance(info.value, EvaluationError) and isinstance(info.value, ValueError)


def test_rows_of_no_or_both_kinds_and_non_objects_are_refused() -> None:
    with pytest.raises(QuestionRecordError, match="exactly one of answer_spans"):
        parse_question(grounding(options=["a", "b", "c", "d"]))
    with pytest.raises(QuestionRecordError, match=r"^line 2: a question must be a JSON object"):
        parse_question([1], line=2)


def test_written_extras_are_typed_and_never_required_columns() -> None:
    row = parse_question(grounding(verified_by="embedded"))  # read: passed through
    with pytest.raises(QuestionRecordError, match="verified_by = 'embedded' is not of its "
                                                  "column type") as info:
        row.to_dict()
    assert info.value.field == "verified_by"
    with pytest.raises(QuestionRecordError, match="try is a required column"):
        dataclasses.replace(row, extra={"try": 0}).to_dict()
    with pytest.raises(QuestionRecordError, match=r"needle_spans"):
        parse_question(choice(needle_spans=[[4.0, 3.0]])).to_dict()


def test_parse_jsonl_numbers_lines_and_refuses_duplicates() -> None:
    lines = [json.dumps(choice(**{"try": t, "answer_index": t})) for t in range(4)]
    text = "\ufeff" + "\n".join([json.dumps(grounding()), "", *lines]) + "\n"
    rows = parse_jsonl(text, path="r/questions.jsonl")
    assert [r.key for r in rows] == [("q1", None), *(("s1", t) for t in range(4))]
    with pytest.raises(QuestionRecordError, match=r"questions.jsonl:3: duplicate question_id "
                                                  r"'s1' try 0, first on line 1"):
        parse_jsonl("\n".join([lines[0], lines[1], lines[0]]), path="questions.jsonl")
    with pytest.raises(QuestionRecordError, match=r"^x.jsonl:1: not valid JSON"):
        parse_jsonl("{", path="x.jsonl")


def test_lenient_reading_keeps_typed_values_and_never_raises() -> None:
    read = read_lenient(grounding(bucket="huge", duration_s=10**400, n_needles="2",
                                  answer_spans=[[1, 2], [3, 1], "x", [0.5, 9.0]]))
    assert read.kind == "grounding"
    assert read.values["bucket"] == "huge"  # right type, wrong value: the gate judges it
    assert read.values["duration_s"] is None and read.values["n_needles"] is None
    assert read.good_spans["answer_spans"] == ((1.0, 2.0), (0.5, 9.0))
    assert len(read.values["answer_spans"]) == 4
    assert read_lenient(grounding(options=[])).kind == "ambiguous"
    assert read_lenient({"question_id": "x"}).kind == "unknown"
    assert read_lenient("text").kind == "not_an_object"
    assert "needle_spans" not in read_lenient(choice(needle_spans="zz")).good_spans


def test_buckets_and_their_bounds() -> None:
    assert [bucket_for(d) for d in (149.9, SHORT_MAX_S, LONG_MIN_S, 900.5)] == [
        "short", "medium", "medium", "long"]
    assert BUCKET_LABELS == {"short": "Short (< 2.5 min)", "medium": "Medium (2.5–15 min)",
                             "long": "Long (> 15 min)"}
    assert set(BUCKET_LABELS) == set(BUCKETS)
    # config states the short montage bound in its own field checks: it must be the owner's.
    limits = [m.lt for m in NemoParams.model_fields["short_max_s"].metadata if hasattr(m, "lt")]
    assert limits == [SHORT_MAX_S]


#: Files that may spell the constants: the owner; the two modules shipped inside a release and
#: imported by lmms-eval / VLMEvalKit without needleforge (their copies are checked below);
#: moment_detr's own window lengths (30-150 s, not our buckets); nemo params' field bounds (checked
#: against the owner in ``test_buckets_and_their_bounds``).
_MAY_SPELL = {
    OWNER, SRC / "release" / "lmms_eval_utils.py", SRC / "release" / "vlmevalkit_dataset.py",
    SRC / "evaluate" / "qvhighlights.py", SRC / "params" / "nemo.py",
}
_DECIMAL = re.compile(r"^[0-9_]+(\.[0-9_]*)?$")
_BUCKET_NAMES = re.compile(r"""["']short["'],\s*["']medium["'],\s*["']long["']""")


def _copies(path: Path) -> list[str]:
    """Where ``path`` spells a constant of the format: the letters in a string, the bucket
    names as a sequence, or a bucket bound as a number (comments and docstrings are prose)."""
    text = path.read_text(encoding="utf-8")
    found = [f"{path.name}: bucket names" for _ in _BUCKET_NAMES.finditer(text)]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        doc = tok.type == tokenize.STRING and tok.string.lstrip("rbuf").startswith(('"""', "'''"))
        if tok.type == tokenize.STRING and LETTERS in tok.string and not doc:
            found.append(f"{path.name}:{tok.start[0]}: {tok.string}")
        number = tok.type == tokenize.NUMBER and _DECIMAL.match(tok.string)
        if number and float(tok.string) in (SHORT_MAX_S, LONG_MIN_S):
            found.append(f"{path.name}:{tok.start[0]}: {tok.line.strip()}")
    return found


def test_the_format_constants_have_one_owner() -> None:
    copies = [c for p in sorted(SRC.rglob("*.py")) if p not in _MAY_SPELL for c in _copies(p)]
    assert copies == [], "import them from needleforge.records.questions"
    assert _copies(OWNER)  # the scan does see them where they are
    assert vlmevalkit_dataset.LETTERS == LETTERS
    assert [lmms_eval_utils.vnbench_doc_to_target({"answer_index": i})
            for i in range(N_OPTIONS)] == list(LETTERS)
    assert lmms_eval_utils.parse_letter(f"({LETTERS[-1]})") == LETTERS[-1]
