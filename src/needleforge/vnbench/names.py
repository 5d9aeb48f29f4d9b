"""Subtitle needles: the sentence drawn on the frames, and the names it can reveal.

The paper's subtitle needle is "The secret word is NAME." with 26 English first names
(seed 000, App. A.1). Ours keeps the sentence and uses a list written for needleforge: given
names from many languages, in several scripts, so that text rendering is exercised beyond
ASCII. Some carry apostrophes or quotation marks (escaping must keep them), some are
accented Latin, Greek, Cyrillic, Armenian or Georgian (covered by the default DejaVu Sans
font), and a few are Chinese, Japanese or Korean: the default font has no CJK glyphs, so
those are used only when ``font_path`` points at a font that covers them (the stage reports
every name it leaves out and why). Names never contain commas: ordering options join names
with ", ".
"""

from __future__ import annotations

#: The subtitle sentence; ``{name}`` is replaced by the secret word.
SUBTITLE_TEMPLATE = "The secret word is {name}."

#: Names that can be the secret word (order matters only for reproducibility).
SECRET_NAMES: tuple[str, ...] = (
    # Latin script, plain
    "Aurelio", "Beatrix", "Cosimo", "Delphine", "Evander", "Fenella", "Gideon", "Hortense",
    "Ignatius", "Juniper", "Kasimir", "Leocadia", "Marisol", "Nikodem", "Orsolya", "Peregrine",
    "Quirino", "Rosalind", "Sigmund", "Tamsin", "Ulrike", "Valentin", "Wilhelmina", "Xavier",
    "Yolanda", "Zebulon",
    # Latin script with diacritics
    "Zoë", "Björn", "Łucja", "Renée", "Çağan", "Iñaki", "Ondřej", "Þórdís",
    # apostrophes and quotation marks (escaping)
    "O'Malley", "D'Arcy", "N'Deye", "Ana \"Nana\"",
    # Greek, Cyrillic, Armenian, Georgian
    "Ξανθίππη", "Δημήτρης", "Мирослава", "Святослав", "Անահիտ", "ნინო",
    # Chinese, Japanese, Korean (need a CJK font)
    "李娜", "王芳", "さくら", "美咲", "지우", "서연",
)


def subtitle_for(name: str) -> str:
    """The subtitle sentence revealing ``name``."""
    return SUBTITLE_TEMPLATE.format(name=name)
