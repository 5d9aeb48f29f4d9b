"""A model server that cannot do the work stops the stage, loudly, before or early in it.

Against the protocol server of :mod:`tests.backends.openai_stub_server` on 127.0.0.1 (real
sockets; ``GET /v1/models`` lists the ids it serves, as vLLM, Ollama and ``transformers serve``
do): a model id the server does not serve is refused when the writer is built, naming the ids
it does serve, before any chat request; a port nobody listens on is a clear error naming the
URL; a stage whose first calls all fail the same way stops with that error instead of finishing
with zero questions; and the CLI prints skips and failed verdicts grouped by kind, with counts.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.backends import default_registry
from needleforge.backends.openai.client import ChatClient, ChatError
from needleforge.backends.openai.writer import (
    EndpointFailure,
    FailureStreak,
    OpenAIDescriber,
    OpenAIVerifier,
)
from needleforge.backends.writing import Skip, Verdict
from needleforge.errors import BackendError
from needleforge.nemo import build_backends, generate
from needleforge.nemo.generate import GenerationResult, SkipRecord
from needleforge.params import NemoParams
from needleforge.records import Verification
from tests.backends.openai_stub_server import ChatStubServer, answer, error, raw
from tests.backends.writer_cases import keyframes, negative_view, target_view
from tests.nemo.nemo_cases import corpus

SERVED = ("qwen2.5vl:7b", "llava:13b")
FAST: dict[str, Any] = {"backoff_s": 0.001, "max_backoff_s": 0.005}


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy may divert 127.0.0.1 traffic, and no developer key may leak into a test."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ChatStubServer]:
    """A server serving two Ollama-style ids (with ``:`` in them)."""
    with ChatStubServer(models=SERVED) as stub:
        yield stub


def closed_port() -> int:
    """A port nobody listens on once the socket closes."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the model check ---------------------------------------------------------------------


def test_a_model_the_server_does_not_serve_is_refused_before_any_work(
    server: ChatStubServer,
) -> None:
    for family in (OpenAIDescriber, OpenAIVerifier):
        with pytest.raises(BackendError) as info:
            family(server.url, model="qwen2.5-vl", **FAST)
        message = str(info.value)
        assert f"the model server at {server.url} does not serve model 'qwen2.5-vl'" in message
        assert "it serves 'qwen2.5vl:7b', 'llava:13b'" in message
        assert f"GET {server.url}/models" in message
    assert server.requests == []  # not one chat request
    assert server.model_listings == 2


def test_an_id_with_a_colon_is_accepted_exactly_and_checked_once(
    server: ChatStubServer,
) -> None:
    client = ChatClient(server.url, model="qwen2.5vl:7b", **FAST)
    assert client.served_models() == SERVED
    client.check_model()
    client.check_model()
    assert server.model_listings == 2  # served_models once, check_model once
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    assert server.model_listings == 3
    server.script(answer('{"skip": true, "reason": "too dark"}'))
    written = described.write(target_view(), needle_type="object")
    assert isinstance(written, Skip) and "too dark" in written.reason
    assert server.model_listings == 3  # the first request does not ask again


def test_a_server_without_a_model_list_is_not_checked() -> None:
    with ChatStubServer() as stub:  # GET /models: 404, like a gateway that lists nothing
        client = ChatClient(stub.url, model="anything", **FAST)
        assert client.served_models() is None
        client.check_model()
        assert OpenAIVerifier(stub.url, model="anything", **FAST).client.model == "anything"


def test_the_check_can_be_switched_off(server: ChatStubServer) -> None:
    OpenAIDescriber(server.url, model="qwen2.5-vl", check_model=False, **FAST)
    assert server.model_listings == 0


def test_a_dead_server_is_a_clear_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for family in (OpenAIDescriber, OpenAIVerifier):
        with pytest.raises(BackendError) as info:
            family(url, model="m", max_retries=1, **FAST)
        message = str(info.value)
        assert message.startswith(f"no answer from the model server at {url} (GET {url}/models:")
        assert "gave up after 2 attempts; last: ConnectError" in message
        assert "is it running, and is base_url right?" in message


def test_the_refusal_says_what_to_do_with_a_server_that_loads_models_on_request() -> None:
    """``transformers serve`` started without a model lists nothing until a request loads one
    (its cache aside): the refusal must not only say "set model: to one of these ids"."""
    with ChatStubServer(models=()) as stub, pytest.raises(BackendError) as info:
        OpenAIDescriber(stub.url, model="/models/tiny-vlm", **FAST)
    message = str(info.value)
    assert "does not serve model '/models/tiny-vlm'; it serves (none)" in message
    assert message.endswith("a server that loads models on request (`transformers serve` "
                            "started without a model) lists only those it has cached or "
                            "loaded: start it with the model, or set check_model: false")
    assert stub.requests == []


def test_a_model_list_that_is_not_one_is_refused() -> None:
    with ChatStubServer(models=()) as stub:
        client = ChatClient(stub.url, model="m", **FAST)
        with pytest.raises(BackendError, match=r"does not serve model 'm'; it serves \(none\)"):
            client.check_model()
    with ChatStubServer(models=SERVED, api_key="sk-right-key") as stub:
        client = ChatClient(stub.url, model="llava:13b", api_key="sk-wrong-key", **FAST)
        with pytest.raises(ChatError, match=r"GET .*/models: HTTP 401") as info:
            client.check_model()
        assert info.value.kind == "HTTP 401"


def test_a_wrong_model_id_stops_nemo_with_exit_2_before_the_store_is_touched(
    server: ChatStubServer, tmp_path: Path
) -> None:
    from needleforge.cli import app

    options = {"base_url": server.url, "model": "qwen2.5-vl"}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "describer": "openai_http", "describer_options": options,
        "verifier": "openai_http", "verifier_options": options}}))
    db = tmp_path / "nf.duckdb"
    result = CliRunner().invoke(app, ["nemo", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 2, result.output
    assert "does not serve model 'qwen2.5-vl'; it serves 'qwen2.5vl:7b'" in result.output
    assert "Traceback" not in result.output
    assert server.requests == [] and not db.exists()


# --- a stage whose every call fails ------------------------------------------------------


def test_the_first_calls_failing_alike_stop_the_describer(server: ChatStubServer) -> None:
    server.script(*[error(400, "image too large")] * 5)
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    for _ in range(2):  # the first failures are the targets' own skips
        written = described.write(target_view(), needle_type="object")
        assert isinstance(written, Skip) and "HTTP 400" in written.reason
    with pytest.raises(EndpointFailure) as info:
        described.write(target_view(), needle_type="object")
    message = str(info.value)
    assert message.startswith("openai-http-llava:13b: stopping: its first 3 calls all failed "
                              "the same way (HTTP 400); the last: POST ")
    assert "image too large" in message
    assert len(server.requests) == 3
    assert not isinstance(info.value, BackendError)  # writers must not swallow it as a skip


def test_the_first_calls_failing_alike_stop_the_verifier(server: ChatStubServer) -> None:
    from needleforge.backends.writing import VerifyRequest

    request = VerifyRequest("object", "the white cat", "When?", target_view(),
                            (negative_view(1, "green"),))
    server.script(*[error(503)] * 6)
    verifier = OpenAIVerifier(server.url, model="llava:13b", max_retries=1, **FAST)
    verdict = verifier.verify(request)
    assert isinstance(verdict, Verdict) and not verdict.passed and "HTTP 503" in verdict.reason
    verifier.verify(request)
    with pytest.raises(EndpointFailure, match=r"first 3 calls all failed the same way "
                                              r"\(HTTP 503\).*gave up after 2 attempts"):
        verifier.verify(request)


def test_a_dead_server_after_the_check_stops_the_stage_too() -> None:
    with ChatStubServer(models=("m",)) as stub:
        described = OpenAIDescriber(stub.url, model="m", max_retries=0, **FAST)
    # the server is gone now: every call is refused by the OS
    for _ in range(2):
        assert isinstance(described.write(target_view(), needle_type="object"), Skip)
    with pytest.raises(EndpointFailure, match=r"\(ConnectError\); the last: POST http://"):
        described.write(target_view(), needle_type="object")


def test_once_a_call_worked_failures_stay_per_target(server: ChatStubServer) -> None:
    server.script(answer('{"skip": true, "reason": "blurred"}'), *[error(400)] * 5)
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    for _ in range(6):
        assert isinstance(described.write(target_view(), needle_type="object"), Skip)


def test_the_streak_counts_one_kind_in_a_row_and_zero_never_stops() -> None:
    streak = FailureStreak(3, who="w")
    for kind in ("HTTP 400", "HTTP 400", "timeout", "HTTP 400", "HTTP 400"):
        streak.failed(kind, f"POST x: {kind}")  # never three alike in a row
    with pytest.raises(EndpointFailure, match=r"^w: stopping: its first 3 calls"):
        streak.failed("HTTP 400", "POST x: HTTP 400")
    never = FailureStreak(0, who="w")
    for _ in range(10):
        never.failed("HTTP 500", "POST x: HTTP 500")
    with pytest.raises(BackendError, match="give_up_after = -1 must be >= 0"):
        FailureStreak(-1, who="w")


def test_generate_stops_with_the_error_instead_of_finishing_with_nothing(
    server: ChatStubServer,
) -> None:
    """``generate()`` over real tables: every chat request gets 400, so the stage raises after
    three requests rather than returning zero questions and a list of skips."""
    c = corpus()
    options = {"base_url": server.url, "model": "qwen2.5vl:7b", **FAST}
    params = NemoParams(describer="openai_http", verifier="openai_http",
                        describer_options=options, verifier_options=options)
    describer, verifier = build_backends(params, registry=default_registry())
    server.script(*[error(400, "Server is pinned to another model")] * 20)
    with pytest.raises(EndpointFailure, match="Server is pinned to another model"):
        generate(**c.kwargs(), params=params, describer=describer, verifier=verifier,
                 keyframes=lambda scene: keyframes(scene, "blue"))
    assert len(server.requests) == 3


PROSE = ("Sure! In these frames a white cat sits on the sofa,\nlooking at the window, and "
         "later it jumps down.")


def test_prose_answers_stop_the_describer_naming_unparseable_answers(
    server: ChatStubServer,
) -> None:
    """A model that answers in prose, never the JSON object asked for: the first two are the
    targets' own skips, the third stops the stage naming the kind and the answer, flat."""
    server.script(*[answer(PROSE)] * 3)
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    for _ in range(2):
        written = described.write(target_view(), needle_type="object")
        assert isinstance(written, Skip) and "no JSON object" in written.reason
    with pytest.raises(EndpointFailure) as info:
        described.write(target_view(), needle_type="object")
    message = str(info.value)
    assert message.startswith("openai-http-llava:13b: stopping: its first 3 calls all failed "
                              "the same way (unparseable answers); the last: no JSON object "
                              "in the answer 'Sure! In these frames a white cat sits on the "
                              "sofa, looking at the window")
    assert "\n" not in message


def test_prose_answers_stop_the_verifier_too(server: ChatStubServer) -> None:
    from needleforge.backends.writing import VerifyRequest

    request = VerifyRequest("object", "the white cat", "When?", target_view(),
                            (negative_view(1, "green"),))
    server.script(*[answer(PROSE)] * 3)
    verifier = OpenAIVerifier(server.url, model="llava:13b", **FAST)
    for _ in range(2):
        verdict = verifier.verify(request)
        assert not verdict.passed and "not in the required format" in verdict.reason
    with pytest.raises(EndpointFailure, match=r"\(unparseable answers\); the last: no JSON"):
        verifier.verify(request)


def test_an_answer_in_the_format_counts_as_working_even_when_it_breaks_a_rule(
    server: ChatStubServer,
) -> None:
    """JSON with a description too long is the target's own skip, and shows the model follows
    the protocol: later prose answers are skips, not a reason to stop the stage."""
    long = " ".join(["white"] * 30) + " cat"
    server.script(answer(f'{{"skip": false, "reason": "", "description": "{long}", '
                         '"question": "When?"}'),
                  *[answer(PROSE)] * 4)
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    reasons = [described.write(target_view(), needle_type="object") for _ in range(5)]
    assert all(isinstance(r, Skip) for r in reasons)
    assert "not a noun phrase" in str(reasons[0]) and "no JSON object" in str(reasons[-1])


def test_malformed_answers_are_a_kind_of_their_own(server: ChatStubServer) -> None:
    server.script(*[raw("<html>gateway</html>")] * 3)
    described = OpenAIDescriber(server.url, model="llava:13b", **FAST)
    for _ in range(2):
        described.write(target_view(), needle_type="object")
    with pytest.raises(EndpointFailure, match=r"\(bad answer\).*not JSON"):
        described.write(target_view(), needle_type="object")


def test_nemo_against_a_model_answering_prose_exits_2_and_stores_nothing(
    server: ChatStubServer, tmp_path: Path
) -> None:
    """The whole stage over a stored corpus (a real video), the stub answering every chat
    request in prose: exit 2 naming "unparseable answers" and one answer, no questions,
    montages or verdicts stored — not "skipped 3× describe" and exit 0."""
    from needleforge.cli import app
    from needleforge.store import Store
    from tests.nemo.nemo_cases import stored_corpus

    db = stored_corpus(tmp_path)
    server.script(*[answer(PROSE)] * 10)
    options = {"base_url": server.url, "model": "llava:13b", **FAST}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "check": {"negatives": False}, "describer": "openai_http", "describer_options": options,
        "verifier": "openai_http", "verifier_options": options}}))
    result = CliRunner().invoke(app, ["nemo", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 2, result.output
    # one error line; besides it only the progress reporter's last line ("stopped at ...")
    lines = [line for line in result.output.splitlines()
             if line.strip() and not line.startswith("nemo: stopped at ")]
    assert len(lines) == 1 and lines[0].startswith("error: openai-http-llava:13b: stopping: "
                                                   "its first 3 calls all failed the same way "
                                                   "(unparseable answers)"), result.output
    assert "no JSON object in the answer 'Sure! In these frames" in lines[0]
    log = lines[0].rsplit("(details: ", 1)[-1].rstrip(")")
    assert "UnparseableAnswer: no JSON object" in Path(log).read_text()
    assert len(server.requests) == 3
    with Store(db, read_only=True) as store:
        counts = store.counts()
    assert counts["montages"] == counts["questions"] == counts["verifications"] == 0


# --- the CLI's report --------------------------------------------------------------------


def test_nemo_prints_skips_and_failed_verdicts_grouped_by_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from needleforge.cli import app
    from needleforge.stages import nemo as nemo_stage

    name = "openai-http-qwen2.5vl:7b"
    url = "http://127.0.0.1:8000/v1/chat/completions"
    skipped = [SkipRecord(f"v-s000{i}", "scene", "describe",
                          f"{name}: model call failed: POST {url}: HTTP 500: "
                          f'{{"error": {{"message": "out of memory {i}"}}}}') for i in range(3)]
    skipped += [SkipRecord(f"v-s000{i}-o0{i}", "object", "describe",
                           f"{name}: object v-s000{i}-o0{i}: label 'sky' is too abstract "
                           "to ground") for i in range(2)]
    skipped.append(SkipRecord("v-s0009", "scene", "plan",
                              "too few negatives: 1 of 4 eligible fit, giving 12.00 s; need "
                              ">= 45.0 s and >= 2 negatives; negatives may hold none of "
                              "['cat']"))
    verdicts = [Verification(f"q{i}", name, "1", False,
                             f"ambiguous: the description also fits negative v-s00{i}: a cat")
                for i in range(2)] + [Verification("q9", name, "1", True, "fits")]
    result = GenerationResult((), (), tuple(verdicts), tuple(skipped))
    monkeypatch.setattr(nemo_stage, "generate_store",
                        lambda **_: nemo_stage.GenerateOutcome(result, None))
    out = CliRunner().invoke(app, ["nemo"]).output
    lines = out.splitlines()
    assert "  skipped 3× describe: model call failed: POST …: HTTP 500: …" in lines
    assert any(line.startswith("    e.g. model call failed: POST http://127.0.0.1:8000/v1/"
                               "chat/completions: HTTP 500:") for line in lines)
    assert "  skipped 2× describe: object …: label … is too abstract to ground" in lines
    assert any(line.startswith("  skipped 1× plan: too few negatives: … of … eligible")
               for line in lines)
    assert ("  failed verification 2× verify: ambiguous: the description also fits "
            "negative …: a cat") in lines
    assert "qwen2.5vl" not in "\n".join(line for line in lines if "×" in line)
