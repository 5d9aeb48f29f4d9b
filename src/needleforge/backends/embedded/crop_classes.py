"""COCO labels and the ImageNet-1k classes that name the same things: the crop check's map.

The embedded verifier's ``crop-classify`` rule (:mod:`.confirm`) cuts a detected object out of
a frame and asks the ImageNet classifier (:mod:`.tagger`) what it is; this map says which of
its 1,000 classes count as the COCO label. Classes are named by the **first synonym** of their
line in ``efficientnet_labels.txt`` (``"tabby"`` for ``"tabby, tabby cat"``), which is unique
there except for ``crane`` and ``maillot`` (neither is used). Birds and dogs are whole index
spans. The map is deliberately narrow — things a viewer would call by the COCO word, plus a
car's own parts (grille, car wheel, car mirror), which is what a close crop of a car shows.
COCO labels with no ImageNet counterpart (person, surfboard, fire hydrant, giraffe, kite,
skateboard, suitcase, fork, scissors, ...) are absent: the crop check cannot tell for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from needleforge.backends.embedded.labels import IMAGENET_COARSE
from needleforge.errors import BackendError

#: COCO label → ImageNet-1k classes (first synonym of each ``efficientnet_labels.txt`` line).
IMAGENET_CLASSES: Mapping[str, frozenset[str]] = MappingProxyType({k: frozenset(v) for k, v in {
    "bicycle": {"mountain bike", "bicycle-built-for-two", "tricycle"},
    "car": {"sports car", "cab", "minivan", "convertible", "jeep", "limousine", "racer",
            "beach wagon", "police van", "ambulance", "Model T", "pickup", "grille",
            "car wheel", "car mirror"},
    "motorcycle": {"moped", "motor scooter"}, "airplane": {"airliner", "warplane", "wing"},
    "bus": {"school bus", "trolleybus", "minibus"},
    "train": {"passenger car", "electric locomotive", "steam locomotive", "streetcar",
              "freight car", "bullet train"},
    "truck": {"trailer truck", "pickup", "tow truck", "moving van", "garbage truck",
              "fire engine"},
    "boat": {"canoe", "speedboat", "lifeboat", "fireboat", "gondola", "yawl", "catamaran",
             "trimaran", "schooner", "container ship", "liner", "paddlewheel", "pirate",
             "submarine", "wreck", "aircraft carrier"},
    "traffic light": {"traffic light"}, "stop sign": {"street sign"},
    "parking meter": {"parking meter"}, "bench": {"park bench"},
    "cat": {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat"},
    "horse": {"sorrel"}, "sheep": {"ram", "bighorn"}, "cow": {"ox"},
    "elephant": {"Indian elephant", "African elephant", "tusker"},
    "bear": {"brown bear", "American black bear", "ice bear", "sloth bear"},
    "zebra": {"zebra"}, "backpack": {"backpack"}, "umbrella": {"umbrella"},
    "handbag": {"purse"}, "tie": {"Windsor tie", "bow tie", "bolo tie"}, "skis": {"ski"},
    "sports ball": {"soccer ball", "basketball", "tennis ball", "golf ball", "volleyball",
                    "rugby ball", "croquet ball", "baseball", "ping-pong ball"},
    "tennis racket": {"racket"},
    "bottle": {"beer bottle", "wine bottle", "water bottle", "pop bottle", "pill bottle"},
    "wine glass": {"red wine", "goblet"},
    "cup": {"cup", "coffee mug", "espresso", "measuring cup"},
    "spoon": {"wooden spoon"}, "knife": {"cleaver"}, "bowl": {"mixing bowl", "soup bowl"},
    "banana": {"banana"}, "apple": {"Granny Smith"}, "orange": {"orange"},
    "broccoli": {"broccoli"}, "hot dog": {"hotdog"}, "pizza": {"pizza"},
    "chair": {"folding chair", "rocking chair", "barber chair", "throne"},
    "couch": {"studio couch"}, "potted plant": {"pot"}, "bed": {"four-poster"},
    "dining table": {"dining table"}, "toilet": {"toilet seat"},
    "tv": {"television", "monitor", "screen"}, "laptop": {"laptop", "notebook"},
    "mouse": {"mouse"}, "remote": {"remote control"},
    "keyboard": {"computer keyboard", "typewriter keyboard", "space bar"},
    "cell phone": {"cellular telephone", "hand-held computer"},
    "microwave": {"microwave"}, "oven": {"stove"}, "toaster": {"toaster"},
    "sink": {"washbasin"}, "refrigerator": {"refrigerator"},
    # Books stand on shelves more often than they lie alone: the classifier calls a crop of
    # a shelf of books "bookcase", "library" or "bookshop" (0.7-0.8 of the mass on the real
    # footage's webcam shot, where "book jacket" got none and a valid "books" was refused).
    "book": {"book jacket", "comic book", "bookcase", "library", "bookshop"},
    "clock": {"wall clock", "analog clock", "digital clock"}, "vase": {"vase"},
    "teddy bear": {"teddy"}, "hair drier": {"hand blower"},
}.items()})
#: Labels mapped by ImageNet index spans instead (59 birds, the 118 dog breeds 151–268).
IMAGENET_SPANS: Mapping[str, frozenset[int]] = MappingProxyType(
    {"bird": IMAGENET_COARSE["bird"], "dog": IMAGENET_COARSE["dog"]})


def crop_class_indices(label_lines: Sequence[str]) -> dict[str, npt.NDArray[np.intp]]:
    """COCO label → indices of its ImageNet classes in a label file's line order.

    Raises:
        BackendError: a mapped class whose first synonym is not exactly one line's.
    """
    first = [line.split(",")[0].strip() for line in label_lines]
    counts = Counter(first)
    found = {name: i for i, name in enumerate(first) if counts[name] == 1}
    out: dict[str, npt.NDArray[np.intp]] = {}
    for label, names in IMAGENET_CLASSES.items():
        missing = sorted(names - found.keys())
        if missing:
            raise BackendError(f"ImageNet classes {missing} of {label!r} are not (once) in the "
                               f"tagger's label file of {len(first)} lines")
        out[label] = np.array(sorted(found[n] for n in names), dtype=np.intp)
    for label, indices in IMAGENET_SPANS.items():
        out[label] = np.array(sorted(i for i in indices if i < len(first)), dtype=np.intp)
    return out
