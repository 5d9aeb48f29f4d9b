"""The splice plan on made-up GOP layouts (no media): what is copied, re-encoded, inserted.

Property: for any GOP layout (IDRs anywhere, the haystack starting and ending inside GOPs
or on them) and any valid needle placement, the plan's output is the haystack in order
with each inserted needle where its metadata says, copied runs are whole GOPs that hold no
needle, and a GOP to re-encode longer than ``max_gop_s`` sends the sample to the cache.
Also the avcC and parameter-set parsing the splice relies on.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.media.gop import CopyRun, GopRefusal, GopSource, PieceCodec
from needleforge.media.h264 import AvcConfig, annexb_units, nal_units, param_set_id
from needleforge.params import VNBenchParams
from needleforge.records import FrameSpan
from needleforge.vnbench.plan import edit_seconds, insert_points, place
from needleforge.vnbench.records import Haystack, Method, Needle, VNBenchSample
from needleforge.vnbench.splice import (
    HayPiece,
    InsertPiece,
    SplicePlan,
    encoder_groups,
    splice_plan,
)

FPS = 10
#: The default GOP limit (``vnbench.max_gop_s``).
MAX_GOP_S = VNBenchParams().max_gop_s
#: An x264 SPS (High, level 1.2, sps id 0) and PPS of a 320x180 stream, and its avcC.
SPS = bytes.fromhex("6764000cacd941419f9f011000000300100000030140f1429960")
PPS = bytes.fromhex("68ef8fcb")
AVCC = (bytes.fromhex("0164000cffe1") + len(SPS).to_bytes(2, "big") + SPS + b"\x01"
        + len(PPS).to_bytes(2, "big") + PPS + bytes.fromhex("fdf8f800"))


def fake_source(bounds: list[int], *, n_frames: int) -> GopSource:
    avcc = AvcConfig.parse(AVCC)
    assert avcc is not None
    codec = PieceCodec(profile="high", level_idc=12, param_id=1, matrix="bt601", tags={})
    return GopSource(path=Path("made-up.mp4"), fps=FPS, n_frames=n_frames, first_frame=0,
                     start_pts=0, time_base=Fraction(1, 1000), bounds=tuple(bounds), delay=0,
                     avcc=avcc, codec=codec)


def make_sample(length_s: int, *, method: Method, positions: list[int],
                needle_s: int = 1) -> VNBenchSample:
    haystack = Haystack(haystack_id="h", video_id="v", source="made-up.mp4",
                        source_sha256="0" * 64, start_s=0, duration_s=length_s)
    needles = tuple(
        Needle(kind="subtitle", method="edit", label=f"n{j}", haystack_s=h, start_s=s,
               end_s=e, text=f"n{j}") if method == "edit" else
        Needle(kind="image", method="insert", label=f"n{j}", haystack_s=h, start_s=s,
               end_s=e, asset=f"n{j}.png")
        for j, (h, s, e) in enumerate(place(method, positions=positions, needle_s=needle_s)))
    inserted = sum(n.end_s - n.start_s for n in needles if n.method == "insert")
    return VNBenchSample(
        sample_id="s", task="t", group="counting", needle_kind=needles[0].kind, method=method,
        haystack=haystack, needles=needles, question="?", options=("1", "2", "3", "4"),
        answer_index=0, duration_s=length_s + inserted, video="s.mp4", seed=0)


def expand(plan: SplicePlan) -> list[int | str]:
    """Each output frame: the haystack frame it shows, or the label of an inserted needle."""
    out: list[int | str] = []
    for item in plan.items:
        if isinstance(item, CopyRun | HayPiece):
            out += list(range(item.span.start, item.span.end))
        else:
            out += [item.needle.label] * item.span.n_frames
    return out


def feed(plan: SplicePlan) -> list[int | str]:
    """What the frames piped to ffmpeg show: re-encoded haystack frames and stills."""
    fed: list[int | str] = []
    for item in plan.items:
        if isinstance(item, HayPiece):
            assert item.feed == len(fed)
            fed += list(range(item.span.start, item.span.end))
        elif isinstance(item, InsertPiece) and item.feed is not None:
            assert item.feed == len(fed)
            fed += [item.needle.label] * item.span.n_frames
    return fed


def expected(sample: VNBenchSample) -> list[int | str]:
    out: list[int | str] = []
    for k in range(round(sample.duration_s * FPS)):
        t, shift = k / FPS, 0
        inside = [n for n in sample.needles if n.method == "insert" and n.start_s <= t < n.end_s]
        if inside:
            out.append(inside[0].label)
            continue
        shift = sum(round((n.end_s - n.start_s) * FPS) for n in sample.needles
                    if n.method == "insert" and n.end_s <= t)
        out.append(k - shift)
    return out


@st.composite
def layouts(draw: st.DrawFn) -> tuple[VNBenchSample, GopSource]:
    length_s = draw(st.integers(4, 20))
    n_frames = length_s * FPS
    head = draw(st.integers(0, 20))
    gops = draw(st.lists(st.integers(3, 30), min_size=70, max_size=70))  # covers 200 frames
    bounds = [-head]
    for size in gops:
        bounds.append(bounds[-1] + size)
        if bounds[-1] >= n_frames:
            break
    if bounds[-1] < n_frames:
        bounds.append(n_frames + draw(st.integers(0, 12)))
    method: Method = draw(st.sampled_from(["edit", "insert"]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    count = draw(st.integers(1, min(4, (length_s + 1) // 2)))
    positions = (edit_seconds(length_s, n=count, rng=rng) if method == "edit"
                 else insert_points(length_s, n=count, rng=rng))
    return make_sample(length_s, method=method, positions=positions), fake_source(
        bounds, n_frames=n_frames)


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_plan_shows_the_haystack_in_order_with_needles_where_planned(
        case: tuple[VNBenchSample, GopSource]) -> None:
    sample, source = case
    plan = splice_plan(sample, source, max_gop_s=MAX_GOP_S)
    if isinstance(plan, GopRefusal):
        assert "longer than" in plan.reason
        return
    assert expand(plan) == expected(sample)
    assert plan.n_frames == round(sample.duration_s * FPS)
    bounds = set(source.bounds)
    edits = {f for n in sample.needles if n.method == "edit"
             for f in range(n.haystack_s * FPS, (n.haystack_s + 1) * FPS)}
    for item in plan.items:
        if isinstance(item, CopyRun):
            assert item.span.start in bounds and item.span.end in bounds  # whole GOPs only
            assert not edits & set(range(item.span.start, item.span.end))
        elif isinstance(item, InsertPiece):  # shown where the question's metadata says
            assert item.span == FrameSpan.from_seconds(item.needle.start_s, item.needle.end_s,
                                                       rate=FPS)
    fed = feed(plan)
    assert [f for f in fed if isinstance(f, int)] == [f for a, b in plan.runs
                                                      for f in range(a, b)]
    for needle, at in plan.edits:  # each edit is drawn on its own haystack second
        assert fed[at: at + FPS] == list(range(needle.haystack_s * FPS,
                                               (needle.haystack_s + 1) * FPS))
    groups = encoder_groups(plan)  # every fresh piece encoded once, in order
    assert [p for g in groups for p in g] == [i for i in plan.items
                                              if not isinstance(i, CopyRun)]
    for group in groups:  # a group is a contiguous range of the feed, or one clip
        starts = [p.feed for p in group]
        assert len(group) == 1 or None not in starts


def test_aligned_gops_copy_everything_but_the_needle_gops() -> None:
    sample = make_sample(10, method="edit", positions=[3, 7])
    plan = splice_plan(sample, fake_source(list(range(0, 101, 20)), n_frames=100),
                       max_gop_s=MAX_GOP_S)
    assert isinstance(plan, SplicePlan)
    assert [type(i).__name__ for i in plan.items] == ["CopyRun", "HayPiece", "CopyRun",
                                                      "HayPiece", "CopyRun"]
    assert plan.runs == ((20, 40), (60, 80))


def test_an_insertion_on_a_gop_boundary_reencodes_nothing() -> None:
    sample = make_sample(10, method="insert", positions=[4])
    plan = splice_plan(sample, fake_source(list(range(0, 101, 20)), n_frames=100),
                       max_gop_s=MAX_GOP_S)
    assert isinstance(plan, SplicePlan) and plan.runs == ()
    assert plan.items[0] == CopyRun(FrameSpan(0, 40, FPS))
    assert plan.items[2] == CopyRun(FrameSpan(40, 100, FPS))


def test_a_needle_in_a_long_gop_is_refused_with_its_length() -> None:
    gop = int(MAX_GOP_S * FPS) + 10
    sample = make_sample(10, method="edit", positions=[1])
    source = fake_source([0, gop, 100 + gop], n_frames=100)
    plan = splice_plan(sample, source, max_gop_s=MAX_GOP_S)
    assert isinstance(plan, GopRefusal)
    assert f"{gop / FPS:g} s GOP" in plan.reason and "source frames [0, " in plan.reason
    assert f"longer than max_gop_s = {MAX_GOP_S:g} s" in plan.reason
    assert isinstance(splice_plan(sample, source, max_gop_s=gop / FPS), SplicePlan)


def test_avcc_parses_and_takes_the_pieces_parameter_sets() -> None:
    avcc = AvcConfig.parse(AVCC)
    assert avcc is not None
    assert (avcc.profile_idc, avcc.level_idc, avcc.nal_length_size) == (100, 12, 4)
    assert avcc.sps == (SPS,) and avcc.pps == (PPS,)
    assert param_set_id(SPS) == 0 and param_set_id(PPS) == 0
    merged = AvcConfig.parse(avcc.with_sets([SPS + b"\x01"], [PPS + b"\x02"]))
    assert merged is not None and merged.sps == (SPS, SPS + b"\x01")
    assert merged.pps == (PPS, PPS + b"\x02") and merged.tail == avcc.tail
    assert AvcConfig.parse(b"\x00\x00\x00\x01" + SPS) is None  # Annex B extradata


def test_nal_units_split_both_framings() -> None:
    units = [SPS, PPS, b"\x65\x88\x84"]
    annexb = b"".join(b"\x00\x00\x00\x01" + u for u in units)
    assert annexb_units(annexb) == units
    prefixed = b"".join(len(u).to_bytes(4, "big") + u for u in units)
    assert list(nal_units(prefixed, length_size=4)) == units
    from needleforge.errors import MediaError
    with pytest.raises(MediaError, match="damaged"):
        list(nal_units(prefixed[:-1], length_size=4))
