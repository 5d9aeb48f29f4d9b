"""The ``openai_http`` question writer and verifier against a real chat server on 127.0.0.1.

What goes out (frames as data URLs with the target's box drawn on them, our prompt) and what
every kind of answer turns into: a needle, a skip with the model's reason, a skip naming the
format problem, a pass, or a failed verdict naming the clip, the HTTP status or the timeout.
Backoffs are milliseconds so the module stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from needleforge.backends import Describer, Verifier, default_registry
from needleforge.backends.openai.writer import OpenAIDescriber, OpenAIVerifier
from needleforge.backends.writer_prompts import (
    PROMPTS_VERSION,
    choose_template,
    describe_prompt,
    verify_prompt,
)
from needleforge.backends.writing import Skip, Verdict, VerifyRequest, WrittenNeedle
from needleforge.errors import BackendError
from needleforge.records import object_id_for, scene_id_for
from tests.backends.openai_stub_server import ChatStubServer, answer, error
from tests.backends.writer_cases import (
    VIDEO_ID,
    colour_name,
    has_red_outline,
    negative_view,
    request_images,
    request_prompt,
    target_view,
)

MODEL = "stub-vlm"
FAST: dict[str, Any] = {"backoff_s": 0.001, "max_backoff_s": 0.005}
QUESTION = "When does the white cat on the blue sofa appear in the video?"
TARGET = object_id_for(scene_id_for(VIDEO_ID, 0), 0)
NEG1, NEG2 = scene_id_for(VIDEO_ID, 1), scene_id_for(VIDEO_ID, 2)


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy may divert 127.0.0.1 traffic, and no developer key may leak into a test."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[ChatStubServer]:
    """A server serving ``MODEL``: every writer built here passes the model check first."""
    with ChatStubServer(models=(MODEL,)) as server:
        yield server


def writer_json(**fields: object) -> str:
    base: dict[str, object] = {"skip": False, "reason": "",
                               "description": "the white cat on the blue sofa",
                               "question": QUESTION}
    return json.dumps(base | fields)


def fit(fits: bool, why: str = "seen") -> str:
    return json.dumps({"fits": fits, "why": why})


def describer(stub: ChatStubServer, **options: Any) -> OpenAIDescriber:
    return OpenAIDescriber(stub.url, model=MODEL, **(FAST | options))


def verifier(stub: ChatStubServer, **options: Any) -> OpenAIVerifier:
    return OpenAIVerifier(stub.url, model=MODEL, **(FAST | options))


def request(*colours: str, label: str | None = "cat") -> VerifyRequest:
    view = target_view(label=label)
    return VerifyRequest("object" if label else "scene", "the white cat on the blue sofa",
                         QUESTION, view,
                         tuple(negative_view(i + 1, c) for i, c in enumerate(colours)))


# --- describer ---------------------------------------------------------------------------


def test_describer_sends_marked_frames_and_returns_the_models_needle(
    stub: ChatStubServer,
) -> None:
    stub.script(answer(writer_json()))
    view = target_view(subtitle="The secret word is marmalade.")
    written = describer(stub).write(view, needle_type="object")

    # The model writes the description; the question comes from our own templates.
    tid, text = choose_template("object", key=view.target_id, seed=0)
    description = "the white cat on the blue sofa"
    assert written == WrittenNeedle("object", description, text.format(obj=description),
                                    f"openai/{MODEL}/v1+{tid}")
    (rec,) = stub.requests
    images = request_images(rec.body)
    assert len(images) == 4  # max_frames of the 6 keyframes
    assert all(has_red_outline(image) for image in images)
    assert {colour_name(image) for image in images} == {"blue"}
    assert request_prompt(rec.body) == describe_prompt(
        "object", n_images=4, subtitles="The secret word is marmalade.", label="cat",
        hint="the white cat")
    assert rec.texts[0].startswith("Below are 4 frames taken in order from one video")


def test_describer_identity_records_model_and_prompts(stub: ChatStubServer) -> None:
    d = describer(stub)
    assert isinstance(d, Describer)
    assert d.name == f"openai-http-{MODEL}"
    assert d.version.endswith(f"/{MODEL}+prompts-{PROMPTS_VERSION}")


def test_scene_needles_show_plain_frames_and_list_the_tags(stub: ChatStubServer) -> None:
    sentence = "A white cat naps on a blue sofa in a living room."
    stub.script(answer(writer_json(description=sentence,
                                   question="When is a white cat napping on a sofa shown?")))
    written = describer(stub, max_frames=2, style="interleaved").write(
        target_view(label=None), needle_type="scene")
    assert isinstance(written, WrittenNeedle) and written.description == sentence
    (rec,) = stub.requests
    images = request_images(rec.body)
    assert len(images) == 2 and not any(has_red_outline(image) for image in images)
    assert 'tagged "cat", "sofa"' in request_prompt(rec.body)
    assert rec.texts[1].startswith("[")  # interleaved: a timestamp before each frame


def test_a_skip_answer_becomes_a_skip_with_the_models_reason(stub: ChatStubServer) -> None:
    stub.script(answer(writer_json(skip=True, reason="the subject is just a patch of sky",
                                   description="", question="")))
    written = describer(stub).write(target_view(), needle_type="object")
    assert isinstance(written, Skip)
    assert "skipped" in written.reason and "just a patch of sky" in written.reason


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("A white cat sitting on a blue sofa.", "no JSON object in the answer"),
        (writer_json(skip="no"), "'skip' is str 'no', not bool"),
        (writer_json(description="the cat inside the red rectangle"), "'red rectangle'"),
        (writer_json(question="Find the cat."), "ending with '?'"),
    ],
)
def test_a_malformed_answer_becomes_a_skip_naming_the_problem(
    stub: ChatStubServer, reply: str, why: str
) -> None:
    stub.script(answer(reply))
    written = describer(stub).write(target_view(), needle_type="object")
    assert isinstance(written, Skip)
    assert written.reason.startswith("model answer not in the required format: ")
    assert why in written.reason


def test_a_fenced_answer_with_chatter_is_accepted(stub: ChatStubServer) -> None:
    stub.script(answer(f"Here you go:\n```json\n{writer_json()}\n```"))
    assert isinstance(describer(stub).write(target_view(), needle_type="object"), WrittenNeedle)


def test_no_call_for_abstract_labels_or_missing_frames(stub: ChatStubServer) -> None:
    written = describer(stub).write(target_view(label="sky"), needle_type="object")
    assert isinstance(written, Skip) and "too abstract" in written.reason
    bare = target_view()
    bare = type(bare)(bare.scene, bare.tags, bare.objects, bare.target_object, ())
    written = describer(stub).write(bare, needle_type="object")
    assert isinstance(written, Skip) and "keyframes" in written.reason
    assert stub.requests == []
    with pytest.raises(ValueError, match="does not fit view"):
        describer(stub).write(target_view(), needle_type="scene")


def test_a_failed_call_becomes_a_skip_naming_the_failure(stub: ChatStubServer) -> None:
    stub.script(*[error(503)] * 2)
    written = describer(stub, max_retries=1).write(target_view(), needle_type="object")
    assert isinstance(written, Skip)
    assert "model call failed" in written.reason and "HTTP 503" in written.reason


# --- verifier ----------------------------------------------------------------------------


def test_fits_the_target_and_no_negative_passes(stub: ChatStubServer) -> None:
    stub.script(answer(fit(True, "a white cat on a blue sofa")),
                answer(fit(False, "no cat")), answer(fit(False, "a street")))
    v = verifier(stub)
    assert isinstance(v, Verifier)
    verdict = v.verify(request("green", "yellow"))
    assert verdict == Verdict(True, f"fits target {TARGET} (a white cat on a "
                                    "blue sofa); none of the 2 negatives fits")
    target, *negatives = stub.requests
    assert all(has_red_outline(image) for image in request_images(target.body))
    assert request_prompt(target.body) == verify_prompt(
        "marked", n_images=4, description="the white cat on the blue sofa")
    for rec, colour in zip(negatives, ("green", "yellow"), strict=True):
        images = request_images(rec.body)
        assert len(images) == 4 and not any(has_red_outline(i) for i in images)
        assert {colour_name(i) for i in images} == {colour}
        assert "Does this clip show an object that fits" in request_prompt(rec.body)


def test_fitting_a_negative_fails_and_names_it(stub: ChatStubServer) -> None:
    stub.script(answer(fit(True)), answer(fit(False)), answer(fit(True, "another white cat")),
                answer(fit(False)))
    verdict = verifier(stub).verify(request("green", "blue", "yellow"))
    assert not verdict.passed
    assert verdict.reason == ("ambiguous: the description also fits negative "
                              f"{NEG2}: another white cat")
    assert len(stub.requests) == 3  # judging stops at the first failure


def test_not_fitting_the_target_fails(stub: ChatStubServer) -> None:
    stub.script(answer(fit(False, "the cat is black")))
    verdict = verifier(stub).verify(request("green"))
    assert verdict == Verdict(False, "the description does not fit target "
                                     f"{TARGET}: the cat is black")


def test_scene_needles_ask_the_scene_question_of_every_clip(stub: ChatStubServer) -> None:
    stub.script(answer(fit(True)), answer(fit(False)))
    assert verifier(stub).verify(request("green", label=None)).passed
    assert all("Does the description fit what this clip shows?" in request_prompt(r.body)
               for r in stub.requests)
    assert not any(has_red_outline(i) for r in stub.requests for i in request_images(r.body))


def test_http_500_after_every_retry_fails_the_verdict(stub: ChatStubServer) -> None:
    stub.script(*[error(500, "model crashed")] * 3)
    verdict = verifier(stub, max_retries=2).verify(request("green"))
    assert not verdict.passed
    assert verdict.reason.startswith(f"verifier call on target {TARGET} "
                                     "failed: POST ")
    assert "gave up after 3 attempts" in verdict.reason and "HTTP 500" in verdict.reason
    assert len(stub.requests) == 3


def test_a_timeout_fails_the_verdict(stub: ChatStubServer) -> None:
    stub.script(answer(fit(True)), answer(fit(False), delay_s=2.0))
    verdict = verifier(stub, timeout_s=0.2, max_retries=0).verify(request("green"))
    assert not verdict.passed
    assert verdict.reason.startswith(f"verifier call on negative {NEG1} failed")
    assert "timed out after 0.2 s" in verdict.reason


def test_a_malformed_answer_fails_the_verdict(stub: ChatStubServer) -> None:
    stub.script(answer(fit(True)), answer("Yes, it fits."))
    verdict = verifier(stub).verify(request("green"))
    assert not verdict.passed
    assert verdict.reason.startswith(f"verifier answer on negative {NEG1} not "
                                     "in the required format: no JSON object")


def test_missing_evidence_never_passes(stub: ChatStubServer) -> None:
    assert verifier(stub).verify(request()).reason.startswith("no negatives in the montage")
    req = request("green")
    blind = type(req.negatives[0])(req.negatives[0].scene, req.negatives[0].tags, (), ())
    stub.script(answer(fit(True)))
    verdict = verifier(stub).verify(VerifyRequest(req.needle_type, req.description,
                                                  req.question, req.target, (blind,)))
    assert verdict == Verdict(False, f"cannot judge negative {NEG1}: negative "
                                     f"scene {NEG1} has no keyframes to show "
                                     "the model")


# --- registry ----------------------------------------------------------------------------


def test_the_registry_builds_both_and_checks_options(stub: ChatStubServer) -> None:
    registry = default_registry()
    built = registry.create("describer", "openai_http", base_url=stub.url, model=MODEL,
                            max_frames=2, abstract_labels=["cat"])
    assert isinstance(built, OpenAIDescriber)
    assert isinstance(built.write(target_view(), needle_type="object"), Skip)  # cat: abstract
    assert isinstance(registry.create("verifier", "openai_http", base_url=stub.url,
                                      model=MODEL), OpenAIVerifier)
    with pytest.raises(BackendError, match=r"\['abstract_labels', .*unexpected keyword"):
        registry.create("verifier", "openai_http", base_url=stub.url, model=MODEL,
                        abstract_labels=["cat"])
    with pytest.raises(BackendError, match="style = 'sideways'"):
        OpenAIDescriber(stub.url, model=MODEL, style="sideways")  # type: ignore[arg-type]
    with pytest.raises(BackendError, match="max_frames = 0 must be >= 1"):
        OpenAIVerifier(stub.url, model=MODEL, max_frames=0)
