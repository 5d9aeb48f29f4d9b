"""An explicit registry of question writers (describers) and verifiers, by name.

Same contract as :class:`needleforge.backends.registry.Registry`, into which it will merge:
nothing is registered on import and there is no module-level registry; callers build one
with :func:`default_nemo_registry` (or an empty :class:`NemoRegistry` in tests). Factories
take keyword options; unknown names and bad options fail before anything is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from needleforge.config import NemoParams
from needleforge.errors import BackendError
from needleforge.nemo.protocols import Describer, Verifier

NemoFamily: TypeAlias = Literal["describer", "verifier"]
NEMO_FAMILIES: tuple[NemoFamily, ...] = ("describer", "verifier")
#: Options a factory receives from :class:`NemoParams` when it accepts them and params.yaml's
#: ``*_options`` do not set them: one seed and one abstract list for the whole stage.
_SHARED_OPTIONS: tuple[str, ...] = ("seed", "abstract_labels", "scene_top_tags")


class NemoRegistry:
    """Maps ``(family, name)`` to a factory; instances are independent of each other."""

    def __init__(self) -> None:
        self._factories: dict[str, dict[str, Callable[..., object]]] = {
            family: {} for family in NEMO_FAMILIES
        }

    def register(
        self, family: NemoFamily, name: str, factory: Callable[..., object], *,
        replace: bool = False,
    ) -> None:
        """Add ``factory`` under ``family``/``name``.

        Raises:
            BackendError: for an unknown family, an empty name, or a taken name (unless
                ``replace``): silent overrides hide configuration mistakes.
        """
        table = self._table(family)
        if not name.strip():
            raise BackendError(f"{family} backend name must not be empty")
        if name in table and not replace:
            raise BackendError(f"{family} backend {name!r} is already registered")
        table[name] = factory

    def names(self, family: NemoFamily) -> tuple[str, ...]:
        """Registered names of ``family``, sorted. Raises BackendError for an unknown family."""
        return tuple(sorted(self._table(family)))

    def describer(self, name: str, /, **options: Any) -> Describer:
        """Build the describer ``name``. Raises BackendError (see :meth:`_create`)."""
        backend = self._create("describer", name, options)
        if not isinstance(backend, Describer):
            raise BackendError(f"describer {name!r} built a {type(backend).__name__}, which "
                               f"does not implement Describer")
        return backend

    def verifier(self, name: str, /, **options: Any) -> Verifier:
        """Build the verifier ``name``. Raises BackendError (see :meth:`_create`)."""
        backend = self._create("verifier", name, options)
        if not isinstance(backend, Verifier):
            raise BackendError(f"verifier {name!r} built a {type(backend).__name__}, which "
                               f"does not implement Verifier")
        return backend

    def accepts(self, family: NemoFamily, name: str) -> tuple[str, ...]:
        """Keyword options the factory takes (empty when it has no readable signature).

        Raises:
            BackendError: for an unknown family or name (the message lists the known ones).
        """
        factory = self._factory(family, name)
        try:
            parameters = inspect.signature(factory).parameters.values()
        except (TypeError, ValueError):
            return ()
        return tuple(p.name for p in parameters
                     if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))

    def _create(self, family: NemoFamily, name: str, options: Mapping[str, Any]) -> object:
        """Raises BackendError: unknown name, or options the factory does not take."""
        factory = self._factory(family, name)
        try:
            inspect.signature(factory).bind(**options)
        except TypeError as exc:
            accepted = ", ".join(self.accepts(family, name)) or "(none)"
            raise BackendError(f"{family} backend {name!r}: bad options {sorted(options)} "
                               f"({exc}); accepted: {accepted}") from exc
        except ValueError:  # no signature to check against: let the call decide
            pass
        return factory(**options)

    def _factory(self, family: NemoFamily, name: str) -> Callable[..., object]:
        table = self._table(family)
        if name not in table:
            known = ", ".join(sorted(table)) or "(none registered)"
            raise BackendError(f"unknown {family} backend {name!r}; known: {known}")
        return table[name]

    def _table(self, family: str) -> dict[str, Callable[..., object]]:
        if family not in self._factories:
            raise BackendError(f"unknown backend family {family!r}; known: "
                               f"{', '.join(NEMO_FAMILIES)}")
        return self._factories[family]


def default_nemo_registry() -> NemoRegistry:
    """A registry holding the shipped NeMo backends (today: ``embedded`` for both)."""
    from needleforge.nemo.embedded import EmbeddedDescriber, EmbeddedVerifier

    registry = NemoRegistry()
    registry.register("describer", "embedded", EmbeddedDescriber)
    registry.register("verifier", "embedded", EmbeddedVerifier)
    return registry


def build_backends(
    params: NemoParams, *, registry: NemoRegistry
) -> tuple[Describer, Verifier]:
    """The describer and verifier ``params`` name, built with their options.

    A factory that accepts ``seed``, ``abstract_labels`` or ``scene_top_tags`` gets the
    stage's values unless its options set them, so templates follow the stage seed.
    Raises:
        BackendError: an unknown backend name or bad options.
    """
    describer = registry.describer(params.describer, **_merged(
        registry, "describer", params.describer, params.describer_options, params=params))
    verifier = registry.verifier(params.verifier, **_merged(
        registry, "verifier", params.verifier, params.verifier_options, params=params))
    return describer, verifier


def _merged(
    registry: NemoRegistry, family: NemoFamily, name: str, options: Mapping[str, Any], *,
    params: NemoParams,
) -> dict[str, Any]:
    shared: dict[str, Any] = {"seed": params.seed, "abstract_labels": params.abstract_labels,
                              "scene_top_tags": params.scene_top_tags}
    accepted = set(registry.accepts(family, name))
    return {k: shared[k] for k in _SHARED_OPTIONS if k in accepted} | dict(options)
