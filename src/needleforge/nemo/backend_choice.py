"""The describer and verifier NeMo stage 2 runs, built from the ``nemo`` params section
through the one backend :class:`~needleforge.backends.registry.Registry`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from needleforge.backends.registry import Registry
from needleforge.backends.writing import Describer, Verifier
from needleforge.params import NemoParams

#: Options a factory receives from :class:`NemoParams` when it accepts them and params.yaml's
#: ``*_options`` do not set them: one seed and one abstract list for the whole stage.
_SHARED_OPTIONS: tuple[str, ...] = ("seed", "abstract_labels", "scene_top_tags")


def build_backends(params: NemoParams, *, registry: Registry) -> tuple[Describer, Verifier]:
    """The describer and verifier ``params`` name, built with their options.

    A factory that accepts ``seed``, ``abstract_labels`` or ``scene_top_tags`` gets the
    stage's values unless its options set them, so templates follow the stage seed and a
    model writer skips the same abstract labels as the embedded one.

    Raises:
        BackendError: an unknown backend name, bad options, or whatever the backend's
            constructor raises (a missing model folder, a malformed URL).
    """
    describer = registry.create("describer", params.describer, **_merged(
        registry, "describer", params.describer, params.describer_options, params=params))
    verifier = registry.create("verifier", params.verifier, **_merged(
        registry, "verifier", params.verifier, params.verifier_options, params=params))
    return describer, verifier


def _merged(
    registry: Registry, family: Literal["describer", "verifier"], name: str,
    options: Mapping[str, Any], *, params: NemoParams,
) -> dict[str, Any]:
    shared: dict[str, Any] = {"seed": params.seed, "abstract_labels": params.abstract_labels,
                              "scene_top_tags": params.scene_top_tags}
    accepted = set(registry.accepts(family, name))
    return {k: shared[k] for k in _SHARED_OPTIONS if k in accepted} | dict(options)
