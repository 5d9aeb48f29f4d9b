"""SSD-MobileNet-v2 on OpenVINO, with OpenCV's prior boxes and detection output in numpy.

Why: the detector's forward pass was most of the CPU of the stages that look at pixels (64 %
of represent, 81 % of NeMo stage 2). OpenVINO runs the same frozen TensorFlow graph about 2x
faster than ``cv2.dnn`` on one thread, in 32-bit floats, with outputs equal to ~2e-4
(``benchmarks/detector_runtime.py``). Its default on CPUs with bfloat16 units is 3-10x faster
but moves class logits by up to 3: a release would then depend on the machine that built it,
so the precision is pinned to f32. ``precision="int8"`` runs a copy quantized once with NNCF
instead (:mod:`.ssd_int8`): ~2x faster, not the f32 detections (``benchmarks/
detector_int8.py`` says how close, and how close across instruction sets); it is opt-in.

What runs where, so that the detections are those ``cv2.dnn`` gave with the text graph that
ships beside the weights (``ssd_mobilenet_v2_coco_2018_03_29.pbtxt``):

* **OpenVINO**: the convolutions, from the resized frame (NHWC float pixels; the graph's own
  ``x * 2/255 - 1`` included) to the twelve box-predictor outputs. The frozen graph's
  pre-processing (a resize loop to 300x300) and post-processing are cut away, so any input
  size works: the NeMo negative check feeds the frame upscaled (see ``detector.py``).
* **numpy**: the ``PriorBox`` layers (boxes sized in input pixels, read from the text graph),
  the sigmoid, and ``DetectionOutput`` (centre-size decoding with the priors' variances,
  per-class top-k and greedy NMS by OpenCV's ``NMSBoxes``, then the overall keep-top-k), as
  OpenCV computes them; its attributes are read from the text graph too.

**The converted model.** OpenVINO reads the 67 MB frozen graph in 20-50 s. The cut model is
saved once as OpenVINO IR in a cache folder (``NEEDLEFORGE_MODEL_CACHE``, else
``$XDG_CACHE_HOME/needleforge``, else ``~/.cache/needleforge``), under the graph's sha256 and
OpenVINO's version, written to a temporary folder and renamed, so concurrent first uses (two
test workers) neither see half a model nor fail; later processes read it in about a second.
**One compiled model per detector.** Each runtime compiles the IR itself (about 0.1 s and
~55 MB: represent's peak RSS went from 740 to 906 MB with its three detectors). A
compiled model with one stream runs one inference at a time: two workers' infer requests on a
shared one took turns, so NeMo stage 2's look-ahead scans kept 1.25 of 2 cores busy; with a
model each, two threads detect twice as many frames a second (``benchmarks/detector_runtime.py``,
"workers"). An infer request, and so a runtime, must still not be shared between threads.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from needleforge.backends.embedded.model_files import sha256_prefix
from needleforge.backends.embedded.ssd_output import (
    BOX_CHANNELS,
    CLASS_CHANNELS,
    Float32Array,
    detection_rows,
    prior_boxes,
    read_text_graph,
)
from needleforge.errors import BackendError

#: The convolutions' arithmetic: the graph's f32, or INT8 quantized once (:mod:`.ssd_int8`).
Precision = Literal["f32", "int8"]
_MODEL_NAME = "ssd_heads"
_bridge_lock = threading.Lock()
_bridge_ready = False


def cache_root() -> Path:
    """Where converted models are kept (module docstring)."""
    explicit = os.environ.get("NEEDLEFORGE_MODEL_CACHE", "").strip()
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "needleforge"


def _openvino() -> Any:
    """The ``openvino`` module, its NumPy bridge set up (once per process, on one thread).

    Why the bridge: OpenVINO's bindings make their NumPy API table on first use (the first
    ``Tensor.data``) in a ``std::call_once`` that takes the GIL inside it. Two threads making
    their first inference at the same moment can deadlock there, one holding the GIL while
    waiting for the once-flag, the other running the once-function and waiting for the GIL:
    seen as both of NeMo's look-ahead workers stuck in ``InferRequest.infer`` for good (a
    resumed generate flow, whose scans were all stored, so no detection had run before the
    workers started). Touching ``Tensor.data`` here, under a Python lock, makes that first use
    happen on one thread before any model exists.
    """
    global _bridge_ready
    try:
        import openvino
    except ImportError as exc:  # a broken install: it is a dependency of the package
        raise BackendError(f"the embedded detector needs OpenVINO (pip install openvino): "
                           f"{exc}") from exc
    with _bridge_lock:
        if not _bridge_ready:
            _ = openvino.Tensor(np.zeros(1, dtype=np.float32)).data
            _bridge_ready = True
    return openvino


def converted_path(graph: Path, *, cache: Path | None = None) -> Path:
    """Where :func:`converted_model` keeps ``graph``'s IR file (whether or not it is there):
    under the graph's sha256 and OpenVINO's version."""
    version = _openvino().__version__.split("-")[0]
    return (cache or cache_root()) / "openvino" / f"{sha256_prefix(graph)}-ov{version}" / \
        f"{_MODEL_NAME}.xml"


def converted_model(graph: Path, *, cache: Path | None = None) -> Path:
    """The IR file of ``graph``'s cut model, converting and saving it on first use.

    Raises:
        BackendError: OpenVINO cannot read the graph, the graph is not the expected SSD, or
            the cache folder cannot be written (naming it).
    """
    ov = _openvino()
    return save_once(converted_path(graph, cache=cache), lambda: _cut(ov, graph))


def save_once(xml: Path, build: Callable[[], Any]) -> Path:
    """``xml`` (an IR file in a folder of its own), saving the model ``build()`` makes there
    unless it is there already: written to a temporary folder beside it and renamed, so that
    concurrent first uses neither see half a model nor fail (module docstring).

    Raises:
        BackendError: the folder cannot be written (naming it), or as ``build``.
    """
    ov = _openvino()
    folder = xml.parent
    if xml.is_file() and xml.with_suffix(".bin").is_file():
        return xml
    try:  # a folder we cannot write is found before the conversion's half a minute
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError as exc:
        raise _unwritable(folder, exc) from exc
    try:
        ov.save_model(build(), str(tmp / xml.name), compress_to_fp16=False)
        tmp.rename(folder)
    except OSError as exc:
        if not xml.is_file():  # not another process finishing first
            raise _unwritable(folder, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xml


def _unwritable(folder: Path, exc: OSError) -> BackendError:
    return BackendError(f"cannot write the converted SSD model under {folder.parent}: {exc} "
                        f"(set NEEDLEFORGE_MODEL_CACHE to a writable folder)")


def _cut(ov: Any, graph: Path) -> Any:
    """The frozen graph from its first convolution's pixel input to the box predictors."""
    from openvino import opset13

    try:
        full = ov.convert_model(str(graph))
    except Exception as exc:  # OpenVINO raises several types for a bad graph
        raise BackendError(f"OpenVINO cannot read the SSD graph {graph}: {exc}") from exc
    convs = [o for o in full.get_ops() if o.get_type_name() == "Convolution"]
    first = [c for c in convs if c.input_value(1).get_partial_shape().to_shape()[1] == 3]
    if len(first) != 1:
        raise BackendError(f"{graph}: expected one convolution on the RGB input, "
                           f"found {len(first)}")
    pixels = _pixel_input(first[0])
    image = opset13.parameter([1, -1, -1, 3], ov.Type.f32, name="image")
    pixels.input(0).replace_source_output(image.output(0))
    heads = _heads(convs)
    results = []
    for level, (box, cls) in enumerate(heads):
        for kind, node in (("box", box), ("class", cls)):
            node.output(0).get_tensor().set_names({f"{kind}_{level}"})
            results.append(opset13.result(node.output(0)))
    return ov.Model(results, [image], _MODEL_NAME)


def _pixel_input(conv: Any) -> Any:
    """The NHWC-to-NCHW transpose that feeds the resized frame into ``conv`` (walking up
    through the graph's scaling ops)."""
    node = conv
    for _ in range(8):
        inputs = [node.input_value(i) for i in range(node.get_input_size())]
        variable = [v.get_node() for v in inputs if v.get_node().get_type_name() != "Constant"]
        if len(variable) != 1:
            break
        node = variable[0]
        if node.get_type_name() == "Transpose":
            return node
    raise BackendError("the SSD graph's pixel input was not found before its first convolution")


def _heads(convs: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The (box, class) output nodes of each box predictor, by feature map from the finest.

    A predictor is a convolution with 4 x anchors or 91 x anchors channels whose bias add
    feeds a reshape (the backbone's 24-channel layers feed further convolutions); the two of
    one level read the same feature map, and levels are ordered by how far that map is from
    the input."""
    levels: dict[str, dict[str, Any]] = {}
    order: dict[str, int] = {}
    for conv in convs:
        channels = conv.input_value(1).get_partial_shape().to_shape()[0]
        boxes = channels % BOX_CHANNELS == 0 and channels // BOX_CHANNELS in (3, 6)
        kind = "box" if boxes else \
            "class" if channels % CLASS_CHANNELS == 0 else None
        bias = [t.get_node() for t in conv.output(0).get_target_inputs()]
        if kind is None or len(bias) != 1:
            continue
        after = {t.get_node().get_type_name() for t in bias[0].output(0).get_target_inputs()}
        if not after & {"Transpose", "Reshape"}:
            continue
        source = conv.input_value(0).get_node()
        key = source.get_friendly_name()  # (Python wrappers of one node differ)
        levels.setdefault(key, {})[kind] = bias[0]
        order[key] = _depth(source)
    pairs = [levels[key] for key in sorted(levels, key=order.__getitem__)]
    if len(pairs) != 6 or any(set(p) != {"box", "class"} for p in pairs):
        raise BackendError(f"the SSD graph has {len(pairs)} box predictor levels, not 6 "
                           f"with a box and a class output each")
    return [(p["box"], p["class"]) for p in pairs]


def _depth(node: Any) -> int:
    """Convolutions on the longest path from the input to ``node`` (feature map order)."""
    best: dict[str, int] = {}
    stack = [(node, False)]
    while stack:
        current, done = stack.pop()
        key = current.get_friendly_name()
        if key in best:
            continue
        parents = [current.input_value(i).get_node() for i in range(current.get_input_size())]
        if not done:
            stack.append((current, True))
            stack.extend((p, False) for p in parents if p.get_friendly_name() not in best)
            continue
        own = 1 if current.get_type_name() in ("Convolution", "GroupConvolution") else 0
        best[key] = own + max((best.get(p.get_friendly_name(), 0) for p in parents), default=0)
    return best[node.get_friendly_name()]


def compiled(xml: Path, *, threads: int) -> Any:
    """A new compiled model of the IR at ``xml`` on ``threads`` inference threads, in f32.

    Not shared: a compiled model runs one inference at a time (module docstring)."""
    ov = _openvino()
    core = ov.Core()
    return core.compile_model(core.read_model(str(xml)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "ENABLE_CPU_PINNING": False})


class SsdRuntime:
    """The detector's forward pass: a resized RGB frame in, OpenCV-style output rows out.

    Args:
        graph: the frozen graph (``.pb``); text_graph: its OpenCV text graph (``.pbtxt``).
        threads: OpenVINO inference threads for this runtime.
        precision: ``"f32"`` (the graph's own weights) or ``"int8"`` (its convolutions
            quantized once with NNCF: :mod:`.ssd_int8`).

    Raises:
        BackendError: an unknown ``precision``; as :func:`converted_model` and
            :func:`read_text_graph` (and :func:`.ssd_int8.quantized_model` for int8).
    """

    def __init__(self, graph: Path, text_graph: Path, *, threads: int,
                 precision: Precision = "f32") -> None:
        if precision not in get_args(Precision):
            raise BackendError(f"precision = {precision!r} must be one of "
                               f"{', '.join(get_args(Precision))}")
        self.text = read_text_graph(text_graph)
        if precision == "int8":
            from needleforge.backends.embedded.ssd_int8 import quantized_model  # needs NNCF

            xml = quantized_model(graph)
        else:
            xml = converted_model(graph)
        self.precision: Precision = precision
        #: Names the INT8 model (NNCF version, calibration hash); "" in f32.
        self.variant = "" if precision == "f32" else \
            "int8-" + xml.parent.name.partition("-int8-")[2]
        self._request = compiled(xml, threads=threads).create_infer_request()
        self._priors: dict[tuple[int, int], tuple[Float32Array, Float32Array]] = {}

    def rows(self, resized: npt.NDArray[Any], *, levels: int | None = None,
             min_score: float = 0.0) -> npt.NDArray[np.float64]:
        """Detection rows for an RGB frame already resized to the network input size, from
        the ``levels`` finest feature maps (None: all six, as OpenCV computes them); with
        ``min_score``, only the rows scoring at least that (:func:`detection_rows`).

        Raises:
            ValueError: ``levels`` is not between 1 and the number of feature maps.
        """
        count = len(self.text.priors)
        if levels is not None and not 1 <= levels <= count:
            raise ValueError(f"levels = {levels!r} must be None or in [1, {count}]")
        height, width = resized.shape[:2]
        outputs = self._request.infer({0: resized[None].astype(np.float32)})
        by_name = {next(iter(k.get_names())): np.asarray(v) for k, v in outputs.items()}
        locs = [by_name[f"box_{k}"] for k in range(count)]
        confs = [by_name[f"class_{k}"] for k in range(count)]
        key = (width, height)
        if key not in self._priors:
            sizes = [(a.shape[2], a.shape[3]) for a in locs]
            self._priors[key] = prior_boxes(sizes, width=width, height=height,
                                            specs=self.text.priors)
        priors, variances = self._priors[key]
        used = count if levels is None else levels
        loc = np.concatenate([a.transpose(0, 2, 3, 1).reshape(-1, BOX_CHANNELS)
                              for a in locs[:used]])
        conf = np.concatenate([a.transpose(0, 2, 3, 1).reshape(-1, CLASS_CHANNELS)
                               for a in confs[:used]])
        # the priors are laid out level by level, finest first (prior_boxes)
        return detection_rows(loc, conf, priors[:len(loc)], variances[:len(loc)],
                              self.text.output, min_score=min_score)
