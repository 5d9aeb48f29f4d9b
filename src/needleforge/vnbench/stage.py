"""The VNBench stage: haystacks → filtered needle pools → samples → rendered videos.

:func:`build_vnbench` is pure apart from the media it writes: rendered samples under
``out_dir`` (``<sample_id>.mp4`` with a ``.json`` sidecar) and reusable work under
``cache_dir`` (haystack clips, inserted pieces, the built-in image and clip sets). The same
videos, params and seed give the same samples, questions and files; a rerun re-renders only
samples whose plan or inputs changed, or whose route would (``reuse_source_gops``,
``max_gop_s``). Anything left out — a name the font cannot draw, an image too similar to a
haystack, a sample whose pools are too small — is reported in ``skipped`` with the reason,
never silently dropped.

With ``reuse_source_gops`` (default) each sample is spliced from its haystack source's own
GOPs (:func:`~needleforge.vnbench.sample_render.render_sample_from_source`), and a haystack's clip
is cached only when one of its samples falls back (once, whichever render thread asks
first); the needle filter reads its frames from the source, so a run whose samples all
splice caches no haystack. Without it every haystack is cached first and every sample is a
montage of its clip (:func:`~needleforge.vnbench.sample_render.render_sample`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeAlias, TypeVar

from needleforge.backends.embedding import ImageEmbedder
from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.media.outputs import sweep_scratch, writing
from needleforge.params import RenderParams, VNBenchParams
from needleforge.records import Video
from needleforge.runtime.progress import OnCount, Steps
from needleforge.vnbench.assets import (
    ImageSet,
    build_builtin_images,
    import_tuxpaint,
    load_image_sets,
)
from needleforge.vnbench.clips import ClipSet, build_builtin_clips, load_clip_sets
from needleforge.vnbench.compose import Layout, compose_sample
from needleforge.vnbench.export import all_records
from needleforge.vnbench.filter import NeedleFilter
from needleforge.vnbench.names import SECRET_NAMES, subtitle_for
from needleforge.vnbench.plan import pick_haystacks
from needleforge.vnbench.records import (
    Haystack,
    VNBenchError,
    VNBenchResult,
    VNBenchSample,
    VNBenchSkip,
)
from needleforge.vnbench.sample_render import SampleRender, render_sample, render_sample_from_source
from needleforge.vnbench.subtasks import ACT_SUBTASKS, LONG_SUBTASKS, SUBTASKS, Pools, SubtaskSpec
from needleforge.vnbench.text import TextStyle, missing_glyphs, resolve_font

_T = TypeVar("_T")
_U = TypeVar("_U")
#: (subtask, haystack, haystack index): one sample to compose.
_SubtaskJob: TypeAlias = tuple[SubtaskSpec, Haystack, int]


def usable_names(font_path: Path) -> tuple[tuple[str, ...], list[VNBenchSkip]]:
    """The secret names whose whole subtitle the font can draw, and a skip for the others.

    Raises:
        VNBenchError: when the font cannot be read.
    """
    names, skips = [], []
    for name in SECRET_NAMES:
        missing = missing_glyphs(subtitle_for(name), font_path=font_path)
        if missing:
            skips.append(VNBenchSkip(f"name {name!r}", f"font {font_path.name} has no glyph for "
                                     f"{''.join(missing)!r}"))
        else:
            names.append(name)
    return tuple(names), skips


def image_pool(params: VNBenchParams, *, cache_dir: Path) -> tuple[ImageSet, list[VNBenchSkip]]:
    """The image needle set: user folders first, then the built-in set and Tux Paint.

    Raises:
        VNBenchError: when a folder is missing or a built-in source is not installed.
    """
    roots = [Path(p).expanduser() for p in params.image_set_dirs]
    if params.builtin_images:
        roots.append(build_builtin_images(cache_dir))
    if params.tuxpaint_dir is not None:
        roots.append(import_tuxpaint(Path(params.tuxpaint_dir).expanduser(),
                                     cache_dir=cache_dir))
    return load_image_sets(roots)


def clip_pool(params: VNBenchParams, *, cache_dir: Path) -> tuple[ClipSet, list[VNBenchSkip]]:
    """The clip needle set: user folders first, then the built-in motion clips.

    Raises:
        VNBenchError: when a folder is missing; MediaError when a built-in clip fails.
    """
    roots = [Path(p).expanduser() for p in params.clip_set_dirs]
    if params.builtin_clips:
        roots.append(build_builtin_clips(cache_dir, seconds=params.clip_needle_s))
    return load_clip_sets(roots)


def _parallel(fn: Callable[[_T], _U], items: Sequence[_T], *, workers: int,
              on_done: Callable[[], None] | None = None) -> list[_U]:
    """``fn`` of each item in order, on ``workers`` threads; ``on_done()`` on this thread as
    each result is taken (in order)."""
    def counted(results: Iterable[_U]) -> list[_U]:
        out = []
        for result in results:
            out.append(result)
            if on_done is not None:
                on_done()
        return out

    if workers <= 1 or len(items) <= 1:
        return counted(fn(item) for item in items)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return counted(pool.map(fn, items))


def _jobs(params: VNBenchParams, videos: Sequence[Video]
          ) -> tuple[list[_SubtaskJob], list[VNBenchSkip]]:
    """Every (subtask, haystack, index) to compose: main tasks and Act share haystacks."""
    specs = [SUBTASKS[t] for t in params.tasks]
    if params.include_act:
        specs += list(ACT_SUBTASKS.values())
    jobs: list[_SubtaskJob] = []
    skips: list[VNBenchSkip] = []
    if specs:
        main, skipped = pick_haystacks(videos, n=params.samples_per_subtask,
                                       min_s=params.min_haystack_s,
                                       max_s=params.max_haystack_s, seed=params.seed,
                                       tag="main")
        skips += skipped
        jobs += [(spec, h, i) for i, h in enumerate(main) for spec in specs]
    if params.include_long:
        long, skipped = pick_haystacks(videos, n=params.long_samples, min_s=params.long_min_s,
                                       max_s=params.long_max_s, seed=params.seed, tag="long")
        skips += skipped
        jobs += [(spec, h, i) for i, h in enumerate(long) for spec in LONG_SUBTASKS.values()]
    return jobs, skips


@dataclasses.dataclass(frozen=True, slots=True)
class _Assets:
    """Everything needles are drawn from, before the per-haystack filter."""

    style: TextStyle
    names: tuple[str, ...]
    images: ImageSet
    clips: ClipSet


def _assets(params: VNBenchParams, *, cache_dir: Path, jobs: Sequence[_SubtaskJob]
            ) -> tuple[_Assets, list[VNBenchSkip]]:
    style = TextStyle(font_path=resolve_font(params.font_path), size_frac=params.text_size_frac,
                      colour=params.text_colour, border_colour=params.border_colour)
    names, skips = usable_names(style.font_path)
    images, clips = ImageSet(()), ClipSet(())
    if any(spec.kind == "image" for spec, _, _ in jobs):
        images, image_skips = image_pool(params, cache_dir=cache_dir)
        skips += image_skips
    if any(spec.kind == "clip" for spec, _, _ in jobs):
        clips, clip_skips = clip_pool(params, cache_dir=cache_dir)
        skips += clip_skips
    return _Assets(style=style, names=names, images=images, clips=clips), skips


def _pools(params: VNBenchParams, *, assets: _Assets, haystacks: Sequence[Haystack],
           embedder: ImageEmbedder, render: RenderParams,
           on_done: Callable[[], None] | None = None) -> tuple[dict[str, Pools], list[VNBenchSkip]]:
    """Each haystack's pools: the images that pass the similarity filter on it
    (``on_done()`` after each haystack)."""
    screen = NeedleFilter(embedder, profile=render, threshold=params.similarity_threshold,
                          n_frames=params.filter_frames)
    pools: dict[str, Pools] = {}
    skips: list[VNBenchSkip] = []
    for haystack in haystacks:
        kept, dropped = screen.screen(assets.images, haystack=haystack)
        skips += dropped
        pools[haystack.haystack_id] = Pools(
            names=assets.names, images=kept, clips=assets.clips,
            level_categories={1: tuple(params.level1_categories),
                              2: tuple(params.level2_categories)},
            count_min=params.count_min, count_max=params.count_max)
        if on_done is not None:
            on_done()
    return pools, skips


def _compose_all(jobs: Sequence[_SubtaskJob], *, pools: dict[str, Pools], params: VNBenchParams,
                 render: RenderParams) -> tuple[list[VNBenchSample], list[VNBenchSkip]]:
    layout = Layout(width=render.width, height=render.height, clip_s=params.clip_needle_s,
                    count_sigma=params.count_sigma)
    samples: list[VNBenchSample] = []
    skips: list[VNBenchSkip] = []
    for spec, haystack, index in jobs:
        try:
            samples.append(compose_sample(spec, haystack=haystack,
                                          pools=pools[haystack.haystack_id], index=index,
                                          seed=params.seed, layout=layout))
        except VNBenchError as err:
            skips.append(VNBenchSkip(f"{spec.task} on haystack {haystack.haystack_id}", str(err)))
    return samples, skips


class HaystackClips:
    """Cached haystack clips, each encoded on first request only (thread-safe: samples render
    on several threads, and a haystack's samples may ask for its clip at once).

    Raises:
        MediaError: naming the source when a clip cannot be encoded; OutputError naming
            ``cache_dir`` when it cannot be written.
    """

    def __init__(self, cache_dir: Path, *, profile: RenderParams) -> None:
        self.cache_dir = cache_dir
        self.cache = haystack_cache(cache_dir, profile=profile)
        self._lock = threading.Lock()
        self._paths: dict[str, Path] = {}

    def path(self, haystack: Haystack) -> Path:
        """The clip of ``haystack``, encoded now unless already there."""
        with self._lock:
            known = self._paths.get(haystack.haystack_id)
        if known is not None:
            return known
        # The cache serializes concurrent requests for one clip and encodes it once.
        with writing(self.cache_dir, what="VNBench cache"):
            path = self.cache.ensure(haystack_spec(haystack)).path
        with self._lock:
            self._paths[haystack.haystack_id] = path
        return path

    def builder(self, haystack: Haystack) -> Callable[[], Path]:
        """``path(haystack)`` for later: what a sample falling back to the cache calls."""
        return lambda: self.path(haystack)


@dataclasses.dataclass(frozen=True, slots=True)
class _Renderer:
    """Renders one sample by the route ``params`` choose (see the module docstring)."""

    params: VNBenchParams
    profile: RenderParams
    style: TextStyle
    clips: HaystackClips
    out_dir: Path
    cache_dir: Path

    def __call__(self, sample: VNBenchSample) -> SampleRender:
        out = self.out_dir / sample.video
        pieces, work = self.cache_dir / "vnbench-pieces", self.cache_dir / "vnbench-work"
        if self.params.reuse_source_gops:
            return render_sample_from_source(
                sample, haystack_clip=self.clips.builder(sample.haystack), out=out,
                profile=self.profile, style=self.style, piece_root=pieces, work_root=work,
                max_gop_s=self.params.max_gop_s)
        return render_sample(sample, haystack_clip=self.clips.path(sample.haystack), out=out,
                             profile=self.profile, style=self.style, piece_root=pieces,
                             work_root=work)


def build_vnbench(
    *, videos: Sequence[Video], params: VNBenchParams, out_dir: Path, cache_dir: Path,
    render: RenderParams, embedder: ImageEmbedder,
    on_step: OnCount | None = None,
) -> VNBenchResult:
    """Generate, render and export VNBench samples (see the module docstring).

    ``on_step(done, total)`` is called as each haystack clip is cached (without
    ``reuse_source_gops``), each haystack screened and each sample rendered; ``total``
    counts every planned sample until they are composed, then those composed.

    Raises:
        VNBenchError: for an unreadable font, a missing asset folder or package file;
        MediaError: when a haystack source cannot be read or encoded, or a sample cannot be
            rendered.
        OutputError: ``out_dir`` or ``cache_dir`` cannot be written (read-only, disk full),
            naming the path; samples rendered before stay.
    """
    jobs, skips = _jobs(params, videos)
    haystacks = sorted({h.haystack_id: h for _, h, _ in jobs}.values(),
                       key=lambda h: h.haystack_id)
    clips = HaystackClips(cache_dir, profile=render)
    cached = 0 if params.reuse_source_gops else len(haystacks)
    step = Steps(cached + len(haystacks) + len(jobs), on_step)
    with writing(cache_dir, what="VNBench cache"):
        assets, asset_skips = _assets(params, cache_dir=cache_dir, jobs=jobs)
        if not params.reuse_source_gops:  # every sample is a montage of its haystack's clip
            _parallel(clips.path, haystacks, workers=render.workers, on_done=step)
    pools, filter_skips = _pools(params, assets=assets, haystacks=haystacks,
                                 embedder=embedder, render=render, on_done=step)
    samples, compose_skips = _compose_all(jobs, pools=pools, params=params, render=render)
    step.total = cached + len(haystacks) + len(samples)
    renderer = _Renderer(params=params, profile=render, style=assets.style, clips=clips,
                         out_dir=out_dir, cache_dir=cache_dir)
    with writing(out_dir, what="VNBench render"):
        out_dir.mkdir(parents=True, exist_ok=True)
        sweep_scratch(out_dir)  # what a killed earlier run left half-written
        renders = _parallel(renderer, samples, workers=render.workers, on_done=step)
    questions, vnbench = all_records(samples)
    return VNBenchResult(samples=tuple(samples), questions=tuple(questions),
                         vnbench_json=tuple(vnbench), videos=tuple(r.path for r in renders),
                         skipped=tuple(skips + asset_skips + filter_skips + compose_skips))


def haystack_spec(haystack: Haystack) -> ClipSpec:
    """The scene-clip cache entry of ``haystack`` (its whole seconds of the source)."""
    return ClipSpec(source=Path(haystack.source), start_s=float(haystack.start_s),
                    end_s=float(haystack.start_s + haystack.duration_s),
                    source_id=haystack.source_sha256)


def haystack_cache(cache_dir: Path, *, profile: RenderParams) -> SceneClipCache:
    """The cache holding VNBench haystack clips (``<cache_dir>/vnbench-haystacks``)."""
    return SceneClipCache(cache_dir / "vnbench-haystacks", profile=profile)


__all__ = ["HaystackClips", "build_vnbench", "clip_pool", "haystack_cache", "haystack_spec",
           "image_pool", "usable_names"]
