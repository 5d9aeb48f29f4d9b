"""The embedded sample corpus: package-shipped real clips plus synthetic programs with truth.

:func:`build_studio` writes real clips copied from installed packages, synthetic videos with
hard cuts at known times and object cut-outs moving across package photos, SRT narration,
an authorization manifest (two rows refused on purpose) and a ground-truth file, all
byte-identical for the same parameters. Module map: :mod:`.assets` (what ships where, and
its rights), :mod:`.plan` (seeded scenes and objects), :mod:`.images` and :mod:`.encode`
(pixels and encoding), :mod:`.subtitles`, :mod:`.truth`, :mod:`.build`. The manifest is
written with the ingest's own row type and writer (:mod:`needleforge.ingest.source_manifest`).
"""

from __future__ import annotations

from needleforge.studio.build import RefusedRow, StudioReport, build_studio

__all__ = ["RefusedRow", "StudioReport", "build_studio"]
