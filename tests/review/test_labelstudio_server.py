"""A review round against a real Label Studio server on loopback (slow: ~40 s to start it).

The store is the review tests' colour world (tests/review/review_cases.py): two short
single-needle questions, q-obj (the kite, answer 3–6 s of m-obj) and q-scene (orange, answer
3–6 s of m-scene). Annotations are posted through the API as the labeling screen's Submit
posts them (``POST /api/tasks/<id>/annotations`` with the result regions and the prediction
they started from).
"""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.records.human import corrected_answer
from needleforge.review.ls_config import LABEL_CONFIG
from needleforge.review.verdict_file import read_verdict_file
from needleforge.store import Store
from needleforge.store.human import human_verdicts
from tests.review.chromium_page import chromium_binary, visit
from tests.review.labelstudio_server import Server, login_cookies, start_server, stop_server
from tests.review.review_cases import make_world

pytestmark = pytest.mark.slow
runner = CliRunner()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("label-studio"))
    try:
        yield running
    finally:
        stop_server(running)


@pytest.fixture(scope="module")
def world_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_world(tmp_path_factory.mktemp("ls-world")).db


def _api(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30,
                        headers={"Authorization": f"Token {server.token}"})


def _review(server: Server, db: Path, *args: str, title: str = "needleforge review") -> Any:
    """``needleforge review`` on the server; a pull's verdict file lies beside ``db``."""
    return runner.invoke(app, ["review", "--db", str(db), "--ls-url", server.url,
                               "--ls-token", server.token, "--ls-project", title,
                               "--media-root", str(server.media_root),
                               "--videos", str(server.media_root / "render"),
                               "--human-verdicts", str(db.with_suffix(".jsonl")), *args])


def _tasks(api: httpx.Client, project_id: int) -> list[dict[str, Any]]:
    body = api.get("/api/tasks", params={"project": project_id, "fields": "all",
                                         "page_size": 100}).json()
    return sorted(body["tasks"], key=lambda t: t["data"]["nf_question_id"])


def _result(choice: str, answer: tuple[int, int]) -> list[dict[str, Any]]:
    return [{"id": "a1", "from_name": "spans", "to_name": "video", "type": "timelinelabels",
             "value": {"ranges": [{"start": answer[0], "end": answer[1]}],
                       "timelinelabels": ["answer"]}},
            {"id": "v1", "from_name": "verdict", "to_name": "video", "type": "choices",
             "value": {"choices": [choice]}},
            {"id": "n1", "from_name": "note", "to_name": "video", "type": "textarea",
             "value": {"text": [f"{choice} by test"]}}]


def _submit(api: httpx.Client, task: dict[str, Any], choice: str, answer: tuple[int, int],
            user: int) -> None:
    body = {"result": _result(choice, answer), "lead_time": 12.5, "completed_by": user,
            "parent_prediction": task["predictions"][0]["id"]}
    response = api.post(f"/api/tasks/{task['id']}/annotations",
                        params={"project": task["project"]}, json=body)
    assert response.status_code == 201, response.text


def test_a_review_round_trip(server: Server, world_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copy(world_db, db)
    first = _review(server, db, "--to", "label-studio", "--annotators", "2")
    assert first.exit_code == 0, first.output
    assert "2 task(s) added, 0 already current; 2 montage video(s) rendered" in first.output
    api = _api(server)
    (project,) = api.get("/api/projects").json()["results"]
    assert project["maximum_annotations"] == 2
    tasks = _tasks(api, project["id"])
    assert [t["data"]["nf_question_id"] for t in tasks] == ["q-obj", "q-scene"]
    for task in tasks:  # the server plays the rendered montage, byte for byte
        video = api.get(task["data"]["video"])
        assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
        rendered = server.media_root / "render" / f"{task['data']['nf_montage_id']}.mp4"
        assert video.content == rendered.read_bytes()
        answer = [r["value"]["ranges"][0] for r in task["predictions"][0]["result"]
                  if r["value"]["timelinelabels"] == ["answer"]]
        assert answer == [{"start": 76, "end": 150}]  # 3–6 s at 25 fps
    again = _review(server, db, "--to", "label-studio", "--annotators", "2")
    assert "0 task(s) added, 2 already current; 0 montage video(s) rendered" in again.output

    second = api.post("/api/users", json={"email": "judge-b@example.org",
                                          "username": "judge-b"}).json()["id"]
    obj, scene = tasks
    _submit(api, obj, "wrong span", (76, 125), user=1)  # the kite leaves at 5 s: 3–5 s
    _submit(api, obj, "wrong span", (76, 125), user=second)
    _submit(api, scene, "wrong description", (76, 150), user=1)
    _submit(api, scene, "valid", (76, 150), user=second)

    pulled = _review(server, db, "--from", "label-studio")
    assert pulled.exit_code == 0, pulled.output
    assert "4 read; 4 new, 0 changed, 0 unchanged" in pulled.output
    assert "answers changed by a human: 1 question(s) (q-obj)" in pulled.output
    # choices a: [wrong span, wrong description], b: [wrong span, valid]: p_o 1/2, p_e 1/4
    assert "Cohen's kappa 0.333 (mean of 1 pair(s)), same choice 50.0 %" in pulled.output
    with Store(db, read_only=True) as store:
        stored = human_verdicts(store)
    assert sorted((v.question_id, v.annotator, v.choice) for v in stored) == [
        ("q-obj", "judge-a@example.org", "wrong span"),
        ("q-obj", "judge-b@example.org", "wrong span"),
        ("q-scene", "judge-a@example.org", "wrong description"),
        ("q-scene", "judge-b@example.org", "valid")]
    assert corrected_answer(v for v in stored if v.question_id == "q-obj") == ((3.0, 5.0),)
    assert all(v.note.endswith("by test") for v in stored)
    kept = db.with_suffix(".jsonl")  # the durable copy holds the same verdicts
    assert f"verdict file {kept}: 4 row(s), 4 new or changed" in pulled.output
    assert sorted(read_verdict_file(kept), key=lambda v: v.source_ref) == \
        sorted(stored, key=lambda v: v.source_ref)

    before, kept_before = db.read_bytes(), kept.read_bytes()
    repeat = _review(server, db, "--from", "label-studio")
    assert "4 read; 0 new, 0 changed, 4 unchanged" in repeat.output
    assert db.read_bytes() == before and kept.read_bytes() == kept_before

    with Store(db) as store:  # q-scene vanishes from the store: its verdicts stay, reported
        store.drop_montages(["m-scene"])
    gone = _review(server, db, "--from", "label-studio")
    assert "2 verdict(s) on questions that no longer exist (kept in the store" in gone.output
    assert f"q-scene ({server.url}/projects/{project['id']}/annotations/" in gone.output
    with Store(db, read_only=True) as store:
        assert len(human_verdicts(store)) == 4
    pushed = _review(server, db, "--to", "label-studio", "--annotators", "2")
    assert "0 removed (never annotated), 1 kept (annotated)" in pushed.output
    assert len(_tasks(api, project["id"])) == 2  # the annotated task is still there

    # a judge deletes an annotation on the server: reported, kept
    first_annotation = _tasks(api, project["id"])[0]["annotations"][0]["id"]
    assert api.delete(f"/api/annotations/{first_annotation}").status_code == 204
    after = _review(server, db, "--from", "label-studio")
    assert "1 stored verdict(s) whose annotation is no longer on the server" in after.output
    assert f"/annotations/{first_annotation}" in after.output
    with Store(db, read_only=True) as store:
        assert len(human_verdicts(store)) == 4
    assert kept.read_bytes() == kept_before  # nor deleted from the file


def test_a_reworded_question_replaces_its_unannotated_task(server: Server, world_db: Path,
                                                           tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copy(world_db, db)
    title = "rewording round"
    assert "2 task(s) added" in _review(server, db, "--to", "label-studio", title=title).output
    with Store(db) as store:
        reworded = [dataclasses.replace(q, text="At what times is the magenta kite seen?")
                    for q in store.questions() if q.question_id == "q-obj"]
        store.record_generation([], reworded, [])
    pushed = _review(server, db, "--to", "label-studio", title=title)
    assert "1 task(s) added, 1 already current" in pushed.output
    assert "1 removed (never annotated), 0 kept (annotated)" in pushed.output
    api = _api(server)
    project = next(p for p in api.get("/api/projects").json()["results"]
                   if p["title"] == title)
    texts = sorted(t["data"]["question"] for t in _tasks(api, project["id"]))
    assert texts == ["At what times is the magenta kite seen?",
                     "When is the whole frame a flat orange screen?"]


def test_a_wrong_token_is_refused_naming_the_server(server: Server, world_db: Path) -> None:
    result = runner.invoke(app, ["review", "--db", str(world_db), "--from", "label-studio",
                                 "--ls-url", server.url, "--ls-token", "not-the-token-000"])
    assert result.exit_code == 2, result.output
    assert f"Label Studio at {server.url} refused the API token" in result.output


def test_a_personal_access_token_works_and_a_forged_one_is_refused(
        server: Server, world_db: Path) -> None:
    made = _api(server).post("/api/token/")  # the admin's personal access token (a JWT)
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    args = ["review", "--db", str(world_db), "--from", "label-studio", "--ls-url", server.url,
            "--ls-project", "no such round"]
    result = runner.invoke(app, [*args, "--ls-token", token])
    # the token is accepted: the error is the missing project, past authentication
    assert result.exit_code == 2 and "no project titled 'no such round'" in result.output
    forged = runner.invoke(app, [*args, "--ls-token", token[:-4] + "AAAA"])
    assert forged.exit_code == 2
    assert f"Label Studio at {server.url} refused the API token on POST /api/token/refresh" \
        in forged.output


def test_a_hand_changed_labeling_config_is_refused_saying_what_differs(
        server: Server, world_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    shutil.copy(world_db, db)
    title = "hand edited round"
    assert _review(server, db, "--to", "label-studio", title=title).exit_code == 0
    api = _api(server)
    project = next(p for p in api.get("/api/projects").json()["results"]
                   if p["title"] == title)
    edited = LABEL_CONFIG.replace('<Choice value="unsure"/>', '<Choice value="maybe"/>')
    assert api.patch(f"/api/projects/{project['id']}",
                     json={"label_config": edited}).status_code == 200
    for direction in ("--to", "--from"):
        result = _review(server, db, direction, "label-studio", title=title)
        assert result.exit_code == 2, result.output
        assert "labeling config that was changed by hand" in result.output
        assert 'only in the project: <View> > <Choices choice="single" name="verdict" ' \
            'required="true" toName="video"> > <Choice value="maybe">' in result.output
        assert '> <Choice value="unsure">' in result.output
    with Store(db, read_only=True) as store:
        assert human_verdicts(store) == []
    restored = _review(server, db, "--to", "label-studio", "--restore-config", title=title)
    assert restored.exit_code == 0, restored.output
    assert "0 task(s) added, 2 already current" in restored.output
    assert _review(server, db, "--from", "label-studio", title=title).exit_code == 0


#: Ready when the video can play its first frame, the timeline counts the montage's frames at
#: the task's rate (12 s at 25 fps), and the regions and verdict choices are drawn.
_READY = """(() => {
  const v = document.querySelector('video');
  const text = document.body.innerText;
  return Boolean(v && v.readyState >= 2 && text.includes('of 300') && text.includes('answer')
    && text.includes('negative') && text.includes('wrong description'));
})()"""


_SEEK_INTO_THE_ANSWER = """(async () => {
  const v = document.querySelector('video');
  v.currentTime = 4.5;
  await new Promise(r => setTimeout(r, 1500));
  return v.currentTime;
})()"""


def test_the_labeling_page_shows_the_video_and_the_timeline(
        server: Server, world_db: Path, tmp_path: Path) -> None:
    if chromium_binary() is None:
        pytest.skip("no chromium (Debian: apt-get install chromium) for the screenshot")
    db = tmp_path / "store.duckdb"
    shutil.copy(world_db, db)
    title = "screenshot round"
    assert _review(server, db, "--to", "label-studio", title=title).exit_code == 0
    api = _api(server)
    project = next(p for p in api.get("/api/projects").json()["results"]
                   if p["title"] == title)
    task = _tasks(api, project["id"])[0]  # q-obj on m-obj: blue, magenta, cyan, olive
    page = visit(f"{server.url}/projects/{project['id']}/data?task={task['id']}",
                 cookies=login_cookies(server), ready_js=_READY, height=1800,
                 then_js=_SEEK_INTO_THE_ANSWER)
    out = Path(os.environ.get("NEEDLEFORGE_SCREENSHOT_DIR", tmp_path))
    (out / "labelstudio-task.png").write_bytes(page.png)
    assert page.ready, f"the labeling page never showed video, timeline and choices: {out}"
    assert page.errors == []
    # the player shows the answer: m-obj at 4.5 s is the kite's magenta scene, larger than a
    # thumbnail (the labels' own colours are green and grey)
    pixels = np.asarray(Image.open(io.BytesIO(page.png)).convert("RGB")).astype(int)
    magenta = (np.abs(pixels - np.array([0xFF, 0x00, 0xFF])).max(axis=2) < 24).sum()
    assert magenta > 200 * 120, f"{magenta} px of the answer's frame in the screenshot"
