"""Backends on local transformers model folders (``hf``, ``hf_vlm``; nothing is downloaded).

Module map: :mod:`.tagger` (image classifiers as taggers, ``hf``), :mod:`.vlm` (image-text-to-text
models as taggers, ``hf_vlm``) and its prompts :mod:`.vlm_prompts`, :mod:`.writer` (the
``hf_vlm`` question writer and verifier), :mod:`.embedder` (CLIP-like image embedders, ``hf``
of the needle filter) and :mod:`.model_dir` (the model-folder checks, names and versions they
share). Importing this package imports none of them, nor transformers.
"""
