"""H.264 bitstream pieces the splice needs: avcC records, NAL units, fresh Annex B pieces.

Only what joining streams by copy requires is parsed: the avcC record of an mp4 track (its
parameter sets, NAL length size, profile and level), NAL unit types, and the id of an SPS
or PPS. Fresh pieces come from x264 as Annex B with an access-unit delimiter before each
frame (``aud=1``); :func:`read_piece` turns them into the length-prefixed access units an mp4
carries.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from needleforge.errors import MediaError

NAL_IDR, NAL_SPS, NAL_PPS, NAL_AUD = 5, 7, 8, 9
_START = re.compile(rb"\x00\x00\x01")


@dataclasses.dataclass(frozen=True, slots=True)
class AvcConfig:
    """An ``avcC`` record (ISO 14496-15): profile, level, NAL length size, SPS and PPS."""

    profile_idc: int
    level_idc: int
    nal_length_size: int
    sps: tuple[bytes, ...]
    pps: tuple[bytes, ...]
    head: bytes
    tail: bytes

    @classmethod
    def parse(cls, data: bytes) -> AvcConfig | None:
        """The record in ``data``, or None when ``data`` is not an avcC (Annex B streams)."""
        if len(data) < 7 or data[0] != 1:
            return None
        try:
            at, sets = 5, []
            for count_mask in (0x1F, 0xFF):
                count, at = data[at] & count_mask, at + 1
                found = []
                for _ in range(count):
                    size = int.from_bytes(data[at: at + 2], "big")
                    found.append(data[at + 2: at + 2 + size])
                    at += 2 + size
                sets.append(tuple(found))
        except IndexError:
            return None
        if at > len(data) or not sets[0] or not sets[1]:
            return None
        return cls(profile_idc=data[1], level_idc=data[3], nal_length_size=(data[4] & 3) + 1,
                   sps=sets[0], pps=sets[1], head=data[:5], tail=data[at:])

    def with_sets(self, sps: Sequence[bytes], pps: Sequence[bytes]) -> bytes:
        """This record with ``sps`` and ``pps`` appended (the pieces' parameter sets)."""
        all_sps, all_pps = [*self.sps, *sps], [*self.pps, *pps]
        return (self.head + bytes([0xE0 | len(all_sps)])
                + b"".join(len(s).to_bytes(2, "big") + s for s in all_sps)
                + bytes([len(all_pps)]) + b"".join(len(p).to_bytes(2, "big") + p for p in all_pps)
                + self.tail)


def _unescape(nal: bytes) -> bytes:
    return nal.replace(b"\x00\x00\x03", b"\x00\x00")


def _ue(data: bytes, bit: int) -> tuple[int, int]:
    """Exp-Golomb ``ue(v)`` at bit ``bit`` of ``data``: (value, next bit)."""
    zeros = 0
    while not (data[(bit + zeros) // 8] >> (7 - (bit + zeros) % 8)) & 1:
        zeros += 1
    bit += zeros + 1
    value = 0
    for _ in range(zeros):
        value = (value << 1) | ((data[bit // 8] >> (7 - bit % 8)) & 1)
        bit += 1
    return (1 << zeros) - 1 + value, bit


def param_set_id(nal: bytes) -> int:
    """The id of an SPS (after profile, flags and level) or PPS (first field) NAL unit."""
    raw = _unescape(nal[:16])
    return _ue(raw, 32 if raw[0] & 0x1F == NAL_SPS else 8)[0]


def nal_units(packet: bytes, *, length_size: int) -> Iterator[bytes]:
    """The NAL units of a length-prefixed (avcC) access unit.

    Raises:
        MediaError: when a length runs past the packet (a damaged packet).
    """
    at = 0
    while at < len(packet):
        size = int.from_bytes(packet[at: at + length_size], "big")
        at += length_size
        if size == 0 or at + size > len(packet):
            raise MediaError(f"damaged H.264 access unit (NAL of {size} bytes at {at} of "
                             f"{len(packet)})")
        yield packet[at: at + size]
        at += size


def annexb_units(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B stream, without start codes or trailing zero bytes."""
    marks = list(_START.finditer(data))
    ends = [*(m.start() for m in marks[1:]), len(data)]
    return [data[m.end():e].rstrip(b"\x00") for m, e in zip(marks, ends, strict=True)]


def has_idr(packet: bytes, *, length_size: int) -> bool:
    """Whether a length-prefixed access unit holds an IDR slice (a clean cut point).

    Raises:
        MediaError: when the packet is damaged.
    """
    return any(n[0] & 0x1F == NAL_IDR for n in nal_units(packet, length_size=length_size))


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedRun:
    """A run of freshly encoded frames: their access units (length-prefixed), keyframe flags
    and parameter sets (bytes, not a time span)."""

    units: tuple[bytes, ...]
    keyframes: tuple[bool, ...]
    sps: bytes
    pps: bytes


def read_piece(path: Path, *, length_size: int, n_frames: int) -> EncodedRun:
    """Split an Annex B piece (an AUD before each frame) into length-prefixed access units.

    Raises:
        MediaError: when it does not hold ``n_frames`` frames starting with an IDR picture.
    """
    units: list[bytes] = []
    keys: list[bool] = []
    params: dict[int, bytes] = {}
    current: list[bytes] = []
    for nal in [*annexb_units(path.read_bytes()), bytes([NAL_AUD])]:
        kind = nal[0] & 0x1F
        if kind == NAL_AUD and current:
            units.append(b"".join(len(n).to_bytes(length_size, "big") + n for n in current))
            keys.append(any(n[0] & 0x1F == NAL_IDR for n in current))
            current = []
        elif kind != NAL_AUD:
            current.append(nal)
            if kind in (NAL_SPS, NAL_PPS):
                params.setdefault(kind, nal)
    if len(units) != n_frames or not keys or not keys[0] or len(params) != 2:
        raise MediaError(f"{path}: encoded {len(units)} frames (expected {n_frames}), first "
                         f"IDR {bool(keys and keys[0])}, parameter sets {sorted(params)}")
    return EncodedRun(units=tuple(units), keyframes=tuple(keys), sps=params[NAL_SPS],
                      pps=params[NAL_PPS])
