"""An explicit backend registry: family + name → factory.

params.yaml chooses backends by name (``detector: {backend: embedded, score_threshold: 0.5}``,
``nemo: {describer: openai_http, describer_options: {...}}``); the registry turns that name into
an object. Nothing is registered on import and there is no module-level registry: callers build
one with :func:`default_registry` (or an empty :class:`Registry` in tests) and pass it where it
is needed, so two registries never share state.
Factories are classes or callables whose keyword arguments are the backend's options; the
registry checks the options against the factory's signature before calling it, and checks that
what comes back satisfies the family's protocol.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, cast, get_args, overload

from needleforge.backends.base import Detector, Tagger, TextReader
from needleforge.backends.embedding import ImageEmbedder
from needleforge.backends.writing import Describer, Verifier
from needleforge.errors import BackendError

BackendFamily: TypeAlias = Literal[
    "tagger", "detector", "text_reader", "describer", "verifier", "image_embedder"
]
#: Every backend family, in a stable order (used in error messages).
FAMILIES: tuple[BackendFamily, ...] = get_args(BackendFamily)
Backend: TypeAlias = Tagger | Detector | TextReader | Describer | Verifier | ImageEmbedder

_PROTOCOLS: Mapping[BackendFamily, type] = MappingProxyType(
    {"tagger": Tagger, "detector": Detector, "text_reader": TextReader,
     "describer": Describer, "verifier": Verifier, "image_embedder": ImageEmbedder}
)


class Registry:
    """Maps ``(family, name)`` to a factory; instances are independent of each other."""

    def __init__(self) -> None:
        self._factories: dict[BackendFamily, dict[str, Callable[..., object]]] = {
            family: {} for family in FAMILIES
        }

    @overload
    def register(
        self, family: Literal["tagger"], name: str, factory: Callable[..., Tagger], *,
        replace: bool = ...,
    ) -> None: ...
    @overload
    def register(
        self, family: Literal["detector"], name: str, factory: Callable[..., Detector], *,
        replace: bool = ...,
    ) -> None: ...
    @overload
    def register(
        self, family: Literal["text_reader"], name: str, factory: Callable[..., TextReader], *,
        replace: bool = ...,
    ) -> None: ...
    @overload
    def register(
        self, family: Literal["describer"], name: str, factory: Callable[..., Describer], *,
        replace: bool = ...,
    ) -> None: ...
    @overload
    def register(
        self, family: Literal["verifier"], name: str, factory: Callable[..., Verifier], *,
        replace: bool = ...,
    ) -> None: ...
    @overload
    def register(
        self, family: Literal["image_embedder"], name: str,
        factory: Callable[..., ImageEmbedder], *, replace: bool = ...,
    ) -> None: ...

    def register(
        self, family: str, name: str, factory: Callable[..., object], *, replace: bool = False
    ) -> None:
        """Add ``factory`` under ``family``/``name``.

        Raises:
            BackendError: for an unknown family, an empty name, or a name already taken
                (unless ``replace`` is true) — silent overrides hide configuration mistakes.
        """
        table = self._table(family)
        if not name.strip():
            raise BackendError(f"backend name for family {family!r} must not be empty")
        if name in table and not replace:
            raise BackendError(f"{family} backend {name!r} is already registered")
        table[name] = factory

    def families(self) -> tuple[str, ...]:
        """The backend families this registry knows."""
        return FAMILIES

    def names(self, family: str) -> tuple[str, ...]:
        """Registered backend names of ``family``, sorted.

        Raises:
            BackendError: for an unknown family.
        """
        return tuple(sorted(self._table(family)))

    def accepts(self, family: str, name: str) -> tuple[str, ...]:
        """Keyword options the factory of ``family``/``name`` takes, in signature order.

        Empty when the factory has no readable signature. Raises:
            BackendError: for an unknown family or name (the message lists the known ones).
        """
        return _accepted(self._factory(family, name))

    @overload
    def create(self, family: Literal["tagger"], name: str, /, **options: Any) -> Tagger: ...
    @overload
    def create(self, family: Literal["detector"], name: str, /, **options: Any) -> Detector: ...
    @overload
    def create(
        self, family: Literal["text_reader"], name: str, /, **options: Any
    ) -> TextReader: ...
    @overload
    def create(self, family: Literal["describer"], name: str, /, **options: Any) -> Describer: ...
    @overload
    def create(self, family: Literal["verifier"], name: str, /, **options: Any) -> Verifier: ...
    @overload
    def create(
        self, family: Literal["image_embedder"], name: str, /, **options: Any
    ) -> ImageEmbedder: ...
    @overload
    def create(self, family: str, name: str, /, **options: Any) -> Backend: ...

    def create(self, family: str, name: str, /, **options: Any) -> Backend:
        """Build the ``family`` backend registered as ``name`` with ``options``.

        Raises:
            BackendError: for an unknown family or name (the message lists the known ones),
                options the factory does not accept (the message lists the accepted ones),
                a product that does not satisfy the family's protocol, or whatever
                ``BackendError`` the backend's constructor raises (missing model files).
        """
        factory = self._factory(family, name)
        _check_options(family, name, factory, options)
        backend = factory(**options)
        protocol = _PROTOCOLS[cast(BackendFamily, family)]
        if not isinstance(backend, protocol):
            raise BackendError(
                f"{family} backend {name!r} built a {type(backend).__name__}, "
                f"which does not implement {protocol.__name__}"
            )
        return cast(Backend, backend)

    def _factory(self, family: str, name: str) -> Callable[..., object]:
        table = self._table(family)
        if name not in table:
            known = ", ".join(sorted(table)) or "(none registered)"
            raise BackendError(f"unknown {family} backend {name!r}; known: {known}")
        return table[name]

    def _table(self, family: str) -> dict[str, Callable[..., object]]:
        if family not in self._factories:
            raise BackendError(
                f"unknown backend family {family!r}; known: {', '.join(FAMILIES)}"
            )
        return self._factories[family]


def _accepted(factory: Callable[..., object]) -> tuple[str, ...]:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return ()
    return tuple(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def _check_options(
    family: str, name: str, factory: Callable[..., object], options: Mapping[str, Any]
) -> None:
    """Fail before building when ``options`` do not fit the factory's keyword parameters."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    try:
        signature.bind(**options)
    except TypeError as exc:
        raise BackendError(
            f"{family} backend {name!r}: bad options {sorted(options)} ({exc}); "
            f"accepted: {', '.join(_accepted(factory)) or '(none)'}"
        ) from exc


def default_registry() -> Registry:
    """A registry holding the backends shipped with needleforge.

    The backends' modules are imported here (not at package import) and they import their
    runtimes (cv2, ai_edge_litert, rapidocr, torch, transformers, ram) only when constructed,
    so building the registry stays cheap. The GPU taggers need a path option: ``ram_plus``
    its ``checkpoint``, ``hf`` (image classifier) and ``hf_vlm`` (image-text-to-text model)
    their ``model_dir``. Question writers and verifiers: ``embedded`` (the writer uses tables
    and templates; the verifier checks against the tables, then confirms every claim on the
    keyframes with the embedded models), ``openai_http`` (needs ``base_url`` and ``model``)
    and ``hf_vlm`` (needs ``model_dir``); ``embedded_tables`` is the table-only verifier.
    """
    from needleforge.backends.embedded.detector import EmbeddedDetector
    from needleforge.backends.embedded.embedder import EmbeddedImageEmbedder
    from needleforge.backends.embedded.ocr import EmbeddedTextReader
    from needleforge.backends.embedded.tagger import EmbeddedTagger
    from needleforge.backends.embedded.verifier import LookingVerifier
    from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
    from needleforge.backends.hf.embedder import HfClipEmbedder
    from needleforge.backends.hf.tagger import HfClassifierTagger
    from needleforge.backends.hf.vlm import HfVlmTagger
    from needleforge.backends.hf.writer import HfDescriber, HfVerifier
    from needleforge.backends.openai.writer import OpenAIDescriber, OpenAIVerifier
    from needleforge.backends.ram_plus import RamPlusTagger

    registry = Registry()
    registry.register("detector", "embedded", EmbeddedDetector)
    registry.register("tagger", "embedded", EmbeddedTagger)
    registry.register("tagger", "ram_plus", RamPlusTagger)
    registry.register("tagger", "hf", HfClassifierTagger)
    registry.register("tagger", "hf_vlm", HfVlmTagger)
    registry.register("text_reader", "embedded", EmbeddedTextReader)
    registry.register("image_embedder", "embedded", EmbeddedImageEmbedder)
    registry.register("image_embedder", "hf", HfClipEmbedder)
    for name, describer, verifier in (
        ("embedded", EmbeddedDescriber, LookingVerifier),
        ("openai_http", OpenAIDescriber, OpenAIVerifier),
        ("hf_vlm", HfDescriber, HfVerifier),
    ):
        registry.register("describer", name, describer)
        registry.register("verifier", name, verifier)
    registry.register("verifier", "embedded_tables", EmbeddedVerifier)
    return registry
