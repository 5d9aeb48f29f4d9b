"""Label tables for the embedded models.

``COCO_LABELS`` is the 90-id category map of the TensorFlow object-detection API (80 used ids;
10, e.g. 12 and 26, are unused gaps), which is how the SSD-MobileNet-v2 COCO graph numbers its
classes. ImageNet labels come from the model package's ``efficientnet_labels.txt``; here we only
turn them into readable tags and, for a few groups, into the COCO word for the same thing, so
classifier tags and detector labels share a vocabulary ("Egyptian cat" → also "cat").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

COCO_LABELS: Mapping[int, str] = MappingProxyType({
    1: "person", 2: "bicycle", 3: "car", 4: "motorcycle", 5: "airplane", 6: "bus",
    7: "train", 8: "truck", 9: "boat", 10: "traffic light", 11: "fire hydrant",
    13: "stop sign", 14: "parking meter", 15: "bench", 16: "bird", 17: "cat", 18: "dog",
    19: "horse", 20: "sheep", 21: "cow", 22: "elephant", 23: "bear", 24: "zebra",
    25: "giraffe", 27: "backpack", 28: "umbrella", 31: "handbag", 32: "tie", 33: "suitcase",
    34: "frisbee", 35: "skis", 36: "snowboard", 37: "sports ball", 38: "kite",
    39: "baseball bat", 40: "baseball glove", 41: "skateboard", 42: "surfboard",
    43: "tennis racket", 44: "bottle", 46: "wine glass", 47: "cup", 48: "fork", 49: "knife",
    50: "spoon", 51: "bowl", 52: "banana", 53: "apple", 54: "sandwich", 55: "orange",
    56: "broccoli", 57: "carrot", 58: "hot dog", 59: "pizza", 60: "donut", 61: "cake",
    62: "chair", 63: "couch", 64: "potted plant", 65: "bed", 67: "dining table",
    70: "toilet", 72: "tv", 73: "laptop", 74: "mouse", 75: "remote", 76: "keyboard",
    77: "cell phone", 78: "microwave", 79: "oven", 80: "toaster", 81: "sink",
    82: "refrigerator", 84: "book", 85: "clock", 86: "vase", 87: "scissors",
    88: "teddy bear", 89: "hair drier", 90: "toothbrush",
})


def _spans(*spans: tuple[int, int]) -> frozenset[int]:
    return frozenset(i for first, last in spans for i in range(first, last + 1))


#: ImageNet-1k class indices (0-based, the order of ``efficientnet_labels.txt``) grouped under
#: the COCO word for them. Only unambiguous groups; everything else keeps its fine tag only.
IMAGENET_COARSE: Mapping[str, frozenset[int]] = MappingProxyType({
    "bird": _spans((7, 24), (80, 100), (127, 146)),
    "dog": _spans((151, 268)),
    "cat": _spans((281, 285)),
    "bear": _spans((294, 297)),
    "elephant": _spans((101, 101), (385, 386)),
    "zebra": _spans((340, 340)),
    "horse": _spans((339, 339)),
    "car": frozenset({436, 468, 511, 609, 627, 656, 661, 751, 817}),
    "truck": frozenset({555, 569, 675, 717, 864, 867}),
    "bus": frozenset({654, 779, 874}),
    "bicycle": frozenset({444, 671}),
    "motorcycle": frozenset({665, 670}),
    "airplane": frozenset({404, 895}),
    "cup": frozenset({504, 968}),
})


def readable_imagenet_label(line: str) -> str:
    """A short readable tag from one ImageNet label line of comma-separated synonyms.

    Rule: the first synonym, replaced by a later synonym that starts with it when one exists,
    because the longer one names the kind ("tabby, tabby cat" → "tabby cat",
    "hammerhead, hammerhead shark" → "hammerhead shark"); Latin names are never first, so
    "tench, Tinca tinca" → "tench".
    """
    synonyms = [s.strip() for s in line.split(",") if s.strip()]
    if not synonyms:
        return line.strip()
    first = synonyms[0]
    for other in synonyms[1:]:
        if other.startswith(first + " "):
            return other
    return first
