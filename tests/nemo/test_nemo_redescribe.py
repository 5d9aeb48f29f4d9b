"""A scene needle whose montage the negative check left short is written again without the
term the check refused the candidates for: the tables said the other shots lack it, the
pixels said otherwise (held-out footage: "someone walking" beside a marathon's ambulance,
where every other shot has a player or a rider on the move)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from nemo_cases import make_tag, make_video, params, tile

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import GenerationResult, generate
from needleforge.nemo.checks.negative_probe import Refusal
from needleforge.nemo.generate import MAX_REDESCRIBES
from needleforge.nemo.targets import Target
from needleforge.records import Box, Scene, Sighting


class _SeesEverywhere:
    """A probe that sees each of ``labels`` in every scene it is asked about (a detector
    finding what no tag recorded); counts what it was asked."""

    def __init__(self, *labels: str, dressed: str = "") -> None:
        self.labels, self.asked, self.dressed = labels, 0, dressed

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        self.asked += 1
        seen = sorted(set(named) & set(self.labels))
        if not seen:
            return None
        label = f"{seen[0]}~{self.dressed}" if self.dressed else seen[0]
        return Refusal("label", Sighting(scene.scene_id, label, 0.9, scene.start_s,
                                         Box(0.1, 0.1, 0.2, 0.2)))


class _CountingDescriber(EmbeddedDescriber):
    """The embedded describer, counting scene needles written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write(self, view, *, needle_type):  # type: ignore[no-untyped-def]
        self.written += needle_type == "scene"
        return super().write(view, needle_type=needle_type)


def _run(probe: _SeesEverywhere, *tags: str, describer: EmbeddedDescriber | None = None
         ) -> tuple[list[Scene], GenerationResult]:
    """A street shot (8 s) tagged ``tags`` among five 6 s shots of other things."""
    scenes = tile([8.0] + [6.0] * 5)
    others = ["tree", "cup", "book", "clock", "vase"]
    rows = [make_tag(scenes[0], t) for t in tags]
    rows += [make_tag(s, others[i]) for i, s in enumerate(scenes[1:])]
    result = generate(videos=[make_video()], scenes=scenes, tags=rows, objects=[],
                      params=params(short_min_s=20.0, short_max_s=40.0, min_scene_tags=1),
                      describer=describer or EmbeddedDescriber(), verifier=EmbeddedVerifier(),
                      probe=probe)
    return scenes, result


def test_the_term_the_check_saw_everywhere_is_left_out_and_the_rest_asked() -> None:
    scenes, result = _run(_SeesEverywhere("dog"), "car", "dog")
    [question] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    assert "car" in question.description and "dog" not in question.description.lower()
    assert question in result.releasable()
    # The refusals that led there are still listed, once per scene.
    seen = [(r.sighting.scene_id, r.sighting.label) for r in result.rejected_negatives]
    assert seen and len(seen) == len(set(seen)) and {label for _, label in seen} == {"dog"}


def test_with_nothing_left_to_say_the_skip_names_what_was_left_out() -> None:
    scenes, result = _run(_SeesEverywhere("dog"), "dog")
    assert not [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    [skip] = [s for s in result.skipped if s.target_id == scenes[0].scene_id]
    assert skip.stage == "describe" and "(written again without 'dog')" in skip.reason


def test_a_needle_is_written_again_at_most_max_redescribes_times() -> None:
    labels = ("car", "dog", "bus", "boat")
    describer = _CountingDescriber()
    scenes, result = _run(_SeesEverywhere(*labels), *labels, describer=describer)
    [skip] = [s for s in result.skipped if s.target_id == scenes[0].scene_id]
    assert skip.stage == "plan" and "refused by the negative check" in skip.reason
    left_out = skip.reason.rsplit("(written again without ", 1)[1].rstrip(")").split(", ")
    assert len(left_out) == MAX_REDESCRIBES and set(left_out) <= {f"'{t}'" for t in labels}
    # The street's needle was written 1 + MAX_REDESCRIBES times; each other shot once.
    assert describer.written == 1 + MAX_REDESCRIBES + 5


def test_a_check_that_refuses_nothing_writes_once() -> None:
    describer = _CountingDescriber()
    scenes, result = _run(_SeesEverywhere("zebra"), "car", "dog", describer=describer)
    [question] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    assert "car" in question.description and "dog" in question.description
    assert describer.written == 6


def test_a_sighting_by_clothes_is_blamed_on_its_word() -> None:
    """The probe labels a person seen by clothes "person~black"; the word left out is the
    label's, so the needle is written without it as with a plain sighting."""
    scenes, result = _run(_SeesEverywhere("dog", dressed="black"), "car", "dog")
    [question] = [q for q in result.questions if q.target_scene_id == scenes[0].scene_id]
    assert "car" in question.description and "dog" not in question.description.lower()
