"""Whole-file bad inputs through their real entry points: manifests (``ingest``), params
(``load_params``), predictions and questions (``score_files``), the store file (``Store``),
backend names (the registry) and a model endpoint that errors, times out or answers garbage
(``OpenAIVideoLLM`` and ``run_model`` against a real local HTTP server).

Each case must raise the project error whose message names the input (file and line, key,
URL) and the problem; the store it would have written keeps every row (or byte) it had, and
a model run that fails keeps the answers it already wrote, so a rerun completes it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends import default_registry
from needleforge.errors import (
    BackendError,
    ConfigError,
    EvaluationError,
    ManifestError,
    NeedleforgeError,
    StoreError,
)
from needleforge.evaluate import OpenAIVideoLLM, load_predictions, run_model, score_files
from needleforge.ingest import ingest
from needleforge.params import IngestParams, load_params
from needleforge.store import Store
from tests.backends.openai_stub_server import ChatStubServer, answer, error, raw
from tests.badinputs.corpus import GOOD, licence
from tests.badinputs.store_snapshot import assert_kept, snapshot
from tests.evaluate.eval_media import grounding_record, make_bars_clip, write_jsonl

TODAY = IngestParams(as_of=dt.date(2026, 6, 1), required_scopes=["benchmark"])
GROUNDING = grounding_record("g1", video="videos/a.mp4", spans=[[1.0, 2.0]], duration_s=4.0)


@dataclasses.dataclass(frozen=True)
class FileCase:
    """``make(folder)`` writes the bad file and returns the call that must fail."""

    id: str
    make: Callable[[Path], Callable[[], object]]
    error: type[NeedleforgeError]
    says: tuple[str, ...]


def _ingest_call(path: Path) -> Callable[[], object]:
    return lambda: ingest(path, media_dir=path.parent / "media", params=TODAY)


def _manifest(name: str, data: bytes) -> Callable[[Path], Callable[[], object]]:
    def make(folder: Path) -> Callable[[], object]:
        (folder / name).write_bytes(data)
        return _ingest_call(folder / name)
    return make


def _params(text: str) -> Callable[[Path], Callable[[], object]]:
    def make(folder: Path) -> Callable[[], object]:
        (folder / "params.yaml").write_text(text)
        return lambda: load_params(folder / "params.yaml")
    return make


def _predictions(lines: str) -> Callable[[Path], Callable[[], object]]:
    def make(folder: Path) -> Callable[[], object]:
        questions = write_jsonl(folder / "questions.jsonl", [GROUNDING])
        (folder / "predictions.jsonl").write_text(lines)
        return lambda: score_files(questions, folder / "predictions.jsonl")
    return make


def _questions(lines: str) -> Callable[[Path], Callable[[], object]]:
    def make(folder: Path) -> Callable[[], object]:
        (folder / "questions.jsonl").write_text(lines)
        (folder / "predictions.jsonl").write_text("")
        return lambda: score_files(folder / "questions.jsonl", folder / "predictions.jsonl")
    return make


def _store(data: bytes) -> Callable[[Path], Callable[[], object]]:
    def make(folder: Path) -> Callable[[], object]:
        (folder / "nf.duckdb").write_bytes(data)
        return lambda: Store(folder / "nf.duckdb")
    return make


def _backend(family: str, name: str) -> Callable[[Path], Callable[[], object]]:
    return lambda folder: lambda: default_registry().create(family, name)  # type: ignore[call-overload]


GOOD_ROW = {"path": GOOD, **licence()}
FILE_CASES = (
    FileCase("manifest-not-utf8", _manifest("m.yaml", b"version: 1\nsources:\n  - path: caf\xe9\n"),
             ManifestError, ("m.yaml", "not UTF-8", "line 3")),
    FileCase("manifest-bad-yaml", _manifest("m.yaml", b"sources: [\n  - path: x\n"),
             ManifestError, ("m.yaml", "not valid YAML")),
    FileCase("manifest-unknown-top-key", _manifest(
        "m.yaml", json.dumps({"version": 1, "sources": [GOOD_ROW], "owner": "me"}).encode()),
             ManifestError, ("m.yaml", "unknown top-level key(s) ['owner']")),
    FileCase("manifest-wrong-shape", _manifest("m.yaml", b"- path: good.mp4\n"),
             ManifestError, ("m.yaml", "expected a mapping")),
    FileCase("manifest-newer-version", _manifest("m.yaml", b"version: 9\nsources: []\n"),
             ManifestError, ("m.yaml", "version = 9 unsupported")),
    FileCase("manifest-csv-unknown-column", _manifest("m.csv", b"path,colour\nx.mp4,red\n"),
             ManifestError, ("m.csv", "unknown column(s) ['colour']")),
    FileCase("manifest-unknown-format", _manifest("m.json", b"{}"),
             ManifestError, ("m.json", "unknown manifest format")),
    FileCase("params-unknown-key", _params("scenes:\n  treshold: 27\n"),
             ConfigError, ("params.yaml", "unknown key 'scenes.treshold'")),
    FileCase("params-wrong-type", _params("render:\n  fps: fast\n"),
             ConfigError, ("params.yaml", "render.fps", "'fast'")),
    FileCase("params-not-yaml", _params("render: [\n"), ConfigError,
             ("params.yaml", "not valid YAML")),
    FileCase("params-not-mapping", _params("- render\n"), ConfigError,
             ("params.yaml", "expected a mapping")),
    FileCase("predictions-garbage-line", _predictions(
        '{"question_id": "g1", "response": "1 - 2"}\n\x00\x01garbage }{\n'),
             EvaluationError, ("predictions.jsonl:2", "not valid JSON")),
    FileCase("predictions-nan-span", _predictions(
        '{"question_id": "g1", "pred_spans": [[NaN, 2.0]]}\n'),
             EvaluationError, ("predictions.jsonl", "line 1", "start = nan must be a finite")),
    FileCase("predictions-duplicate", _predictions(
        '{"question_id": "g1", "response": "1"}\n{"question_id": "g1", "response": "2"}\n'),
             EvaluationError, ("predictions.jsonl:2", "duplicate question_id 'g1'")),
    FileCase("questions-garbage-line", _questions(json.dumps(GROUNDING) + "\nnot json\n"),
             EvaluationError, ("questions.jsonl:2", "not valid JSON")),
    FileCase("store-not-duckdb", _store(b"SQLite format 3\x00" + b"\x00" * 4096),
             StoreError, ("nf.duckdb", "cannot open as a DuckDB store")),
    FileCase("backend-unknown-name", _backend("detector", "yolo-v99"),
             BackendError, ("yolo-v99", "known:")),
    FileCase("backend-unknown-family", _backend("painter", "embedded"),
             BackendError, ("painter", "known:")),
)


@pytest.fixture()
def seeded(corpus: Path, tmp_path: Path) -> Path:
    """A store holding one ingested video: what a failing call must leave as it was."""
    db = tmp_path / "seed" / "nf.duckdb"
    manifest = corpus / f"files-seed-{tmp_path.name}.yaml"
    manifest.write_text(json.dumps({"version": 1, "sources": [GOOD_ROW]}))
    result = ingest(manifest, media_dir=db.parent / "media", params=TODAY)
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    return db


@pytest.mark.parametrize("case", FILE_CASES, ids=[c.id for c in FILE_CASES])
def test_bad_file_raises_naming_it(case: FileCase, tmp_path: Path, seeded: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    call = case.make(folder)
    before = snapshot(seeded)
    bytes_before = {p: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with pytest.raises(case.error) as info:
        result = call()
        if isinstance(result, Store):  # pragma: no cover - only when the case fails
            result.close()
    for text in case.says:
        assert text in str(info.value), (text, str(info.value))
    assert_kept(before, snapshot(seeded))
    assert {p: p.read_bytes() for p in bytes_before} == bytes_before  # inputs untouched


# -- a model endpoint that fails ------------------------------------------------------------

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.02, "max_retries": 1}
FRAME = [(0.0, np.zeros((32, 32, 3), dtype=np.uint8))]


@pytest.fixture()
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStubServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with ChatStubServer() as server:
        yield server


ENDPOINT_CASES = {
    "endpoint-500": ((error(500), error(500)), {}, ("/chat/completions", "500")),
    "endpoint-timeout": ((answer("late", delay_s=2.0), answer("late", delay_s=2.0)),
                         {"timeout_s": 0.3}, ("/chat/completions", "gave up after 2")),
    "endpoint-not-json": ((raw("<html>oops</html>"),), {}, ("/chat/completions", "not JSON")),
    "endpoint-no-choices": ((raw({"choices": []}),), {}, ("/chat/completions", "choices[0]")),
    "endpoint-content-not-text": (
        (raw({"choices": [{"message": {"content": 42}}]}),), {},
        ("/chat/completions", "content is")),
}


@pytest.mark.parametrize("case", sorted(ENDPOINT_CASES))
def test_model_endpoint_failure_names_the_url(case: str, stub: ChatStubServer) -> None:
    replies, options, says = ENDPOINT_CASES[case]
    stub.script(*replies)
    model = OpenAIVideoLLM(stub.url, model="stub-vlm", **{**FAST, **options})
    with pytest.raises(BackendError) as info:
        model.answer(FRAME, "When is the clock seen?", kind="grounding")
    for text in says:
        assert text in str(info.value), (text, str(info.value))
    assert stub.url in str(info.value)


def test_a_failing_endpoint_keeps_answers_written_and_resumes(
    stub: ChatStubServer, tmp_path: Path
) -> None:
    (tmp_path / "videos").mkdir()
    make_bars_clip(tmp_path / "videos" / "a.mp4")
    make_bars_clip(tmp_path / "videos" / "b.mp4")
    questions = write_jsonl(tmp_path / "questions.jsonl", [
        GROUNDING, grounding_record("g2", video="videos/b.mp4", spans=[[2.0, 3.0]],
                                    duration_s=4.0)])
    out = tmp_path / "preds.jsonl"
    stub.script(answer("1 - 2"), error(500), error(500))
    model = OpenAIVideoLLM(stub.url, model="stub-vlm", **FAST)
    with pytest.raises(BackendError, match="500"):
        run_model(questions, model=model, release_dir=tmp_path, out=out, workers=1,
                  max_frames=4)
    kept = load_predictions(out)
    assert [p.question_id for p in kept] == ["g1"]
    stub.script(answer("2 - 3"))
    run_model(questions, model=model, release_dir=tmp_path, out=out, workers=1, max_frames=4)
    assert sorted(p.question_id for p in load_predictions(out)) == ["g1", "g2"]
