"""Work ahead on worker threads, taken in the serial order: NeMo stage 2 on every core.

Why: stage 2's cost is model runs on scenes (on the demo store, about 80 % of its CPU in the
SSD detector's ``forward``): the negative check's scan of every scene a montage may take
(:mod:`~needleforge.nemo.checks.negative_scan`) and the looking verifier's SSD x1.5 detections
on the keyframes of every negative it is shown (:mod:`~needleforge.backends.embedded.verifier`).
Serially they run one after another on the main thread, where only the detector's own threads reach
the second core (measured with OpenCV's DNN module: 1.5 of 2 cores busy). Both inputs are known
before they are needed: the scenes a montage may draw (every scene long enough of each video holding
a target) and, once a montage is planned, the frames its verifier will look at. :class:`Workers`
computes such work on ``count`` threads while the
planning loop goes on, and the loop takes each result exactly where the serial code would have
computed it (it waits on that job's future there). What is stored is therefore the serial
result: the same scans, made by the same code on the same pixels, recorded in the order
planning asked for them; the same detections, hence the same verdicts. A job whose result is
never asked for (a scene no montage draws) costs CPU and changes nothing.

Each worker thread gets its own models (``make()`` is called once per thread and factory):
detector infer requests, LiteRT interpreters and PyAV containers are not thread-safe, and
each of them releases the GIL while it computes, so threads run truly in parallel without
copying frames to other processes. A worker's failure (a vanished video file, a model
error) is raised by the future where the serial code would have raised it, with the same
message.
:meth:`Workers.close` cancels what has not started and waits for what has, so nothing runs on
after the stage returns or fails.

How many workers: ``generate(workers=...)``; the CLI and the DVC stage take
:func:`default_workers` (``NEEDLEFORGE_NEMO_WORKERS``, else :data:`DEFAULT_WORKERS`).
Measured on the demo store: ``docs/performance.md``, "NeMo stage 2 on the demo store".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from needleforge.backends.embedded.eyes import Submit
    from needleforge.backends.writing import VerifyRequest

M = TypeVar("M")
R = TypeVar("R")
#: Worker threads by default: the 2 cores the demo's budget is measured on (the planning loop
#: itself mostly waits on them); 0 (serial, no threads) when this process may use one core.
DEFAULT_WORKERS = 2 if len(os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity")
                           else range(os.cpu_count() or 1)) >= 2 else 0
#: Threads each worker's models use: the workers are the parallelism (a 2-thread forward
#: spent 10-25 % more CPU per frame than 1 thread, for the same output).
WORKER_MODEL_THREADS = 1


def default_workers() -> int:
    """:data:`DEFAULT_WORKERS`, unless ``NEEDLEFORGE_NEMO_WORKERS`` (an integer >= 0) says.

    Raises:
        ValueError: the variable is set to something else.
    """
    raw = os.environ.get("NEEDLEFORGE_NEMO_WORKERS", "").strip()
    if not raw:
        return DEFAULT_WORKERS
    if not raw.isdigit():
        raise ValueError(f"NEEDLEFORGE_NEMO_WORKERS = {raw!r} must be an integer >= 0")
    return int(raw)


class Workers:
    """``count`` worker threads, each with its own models (module docstring).

    Args:
        count: threads (>= 1).

    Raises:
        ValueError: ``count < 1``.
    """

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"count = {count} must be >= 1")
        self.count = count
        self._pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="nemo-ahead")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._made: list[Any] = []
        self._closed = False
        import cv2

        # OpenCV's thread count (its resizes and colour conversions) is process-wide: one per
        # worker while they run, so two workers do not oversubscribe 2 cores; restored by
        # close().
        self._cv2_threads = cv2.getNumThreads()
        cv2.setNumThreads(WORKER_MODEL_THREADS)

    def submit(self, make: Callable[[], M], job: Callable[[M], R]) -> Future[R]:
        """Run ``job(model)`` on a worker, ``model`` being that thread's own ``make()``
        (made on its first job with this ``make``, kept until :meth:`close`).

        Raises:
            RuntimeError: after :meth:`close`.
        """
        if self._closed:
            raise RuntimeError("Workers.submit after close()")
        return self._pool.submit(lambda: job(self._model(make)))

    def _model(self, make: Callable[[], M]) -> M:
        models: dict[Callable[[], Any], Any] | None = getattr(self._local, "models", None)
        if models is None:
            models = self._local.models = {}
        if make not in models:
            models[make] = make()
            with self._lock:
                self._made.append(models[make])
        model: M = models[make]
        return model

    def close(self) -> None:
        """Cancel jobs not yet started, wait for running ones, close every worker model that
        has a ``close()`` (open videos), restore OpenCV's thread count; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            made, self._made = self._made, []
        for model in made:
            closer = getattr(model, "close", None)
            if callable(closer):
                closer()
        import cv2

        cv2.setNumThreads(self._cv2_threads)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@runtime_checkable
class LooksAhead(Protocol):
    """A verifier that can have the looking for a request done ahead on worker threads
    (:class:`~needleforge.backends.embedded.verifier.LookingVerifier`)."""

    def look_ahead(self, request: VerifyRequest, submit: Submit) -> int:
        """Queue the work :meth:`Verifier.verify` will need for ``request``."""
        ...

    def drop_ahead(self) -> int:
        """Forget queued work no verdict asked for."""
        ...
