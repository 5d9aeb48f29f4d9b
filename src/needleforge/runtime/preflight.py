"""Checks that a stage's model backends can start, made before anything slow.

A stage used to find out that its model server was down, or its checkpoint missing, only
when it built its backends: after importing its stage module (pandas, Great Expectations,
OpenCV: 11 s to over a minute on a busy machine) and, for a server that died mid-run, after
scanning. :func:`check_objects` and :func:`check_nemo` ask first, importing only what the
check needs (the HTTP client for a model server, nothing heavier than the standard library
for files):

* a model server (``openai_http`` describer or verifier): ``GET {base_url}/models`` answers
  and lists the model, as the backend itself will check again
  (:meth:`~needleforge.backends.openai.client.ChatClient.check_model`; ``check_model: false``
  skips both);
* RAM++ (``ram_plus`` tagger): the sidecar Python exists, and the checkpoint exists and looks
  like a PyTorch checkpoint (not empty, not a text or HTML page), with the other needs of
  :func:`~needleforge.backends.ram_plus.require_ram_plus`;
* a local transformers model (``hf``, ``hf_vlm``): its ``model_dir`` is a folder.

Anything else is left to the backend's constructor. Every failure is a
:class:`~needleforge.errors.BackendError` naming the option and the absolute path or URL.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from needleforge.params import NemoParams, ObjectParams


def check_objects(objects: ObjectParams) -> None:
    """Check the tagger the ``objects`` section names (the represent and objects commands).

    Raises:
        BackendError: a missing sidecar Python, a missing or unusable checkpoint, a missing
            model folder; every problem of RAM++ at once.
    """
    _local_model("objects.tagger", objects.tagger, objects.tagger_options)


def check_nemo(nemo: NemoParams) -> None:
    """Check the describer and verifier the ``nemo`` section names (a model server is asked
    once for both when they share it).

    Raises:
        BackendError: a model server that does not answer or does not serve the model, a
            missing model folder.
    """
    checked: set[tuple[str, str]] = set()
    for role, name, options in (("describer", nemo.describer, nemo.describer_options),
                                ("verifier", nemo.verifier, nemo.verifier_options)):
        if name == "openai_http":
            _model_server(options, checked=checked)
        elif name == "hf_vlm":
            _local_model(f"nemo.{role}", name, options)


def _model_server(options: Mapping[str, Any], *, checked: set[tuple[str, str]]) -> None:
    """Ask the server the options name whether it serves their model (once per pair)."""
    from needleforge.backends.openai.client import ChatClient

    base_url, model = options.get("base_url"), options.get("model")
    if not isinstance(base_url, str) or not isinstance(model, str) \
            or options.get("check_model") is False or (base_url, model) in checked:
        return  # the backend names a missing option itself
    accepted = set(inspect.signature(ChatClient).parameters) - {"base_url"}
    client = ChatClient(base_url, **{k: v for k, v in options.items() if k in accepted})
    client.check_model()
    checked.add((base_url, model))


def _local_model(where: str, name: str, options: Mapping[str, Any]) -> None:
    """The files a ``ram_plus``, ``hf`` or ``hf_vlm`` backend will read, checked by name."""
    if name == "ram_plus" and isinstance(options.get("checkpoint"), str):
        from needleforge.backends.ram_plus import require_ram_plus

        bert_dir, python = options.get("bert_dir"), options.get("python")
        require_ram_plus(str(options["checkpoint"]),
                         str(bert_dir) if bert_dir is not None else None,
                         python=str(python) if python is not None else None)
    elif name in ("hf", "hf_vlm") and isinstance(options.get("model_dir"), str):
        from needleforge.backends.local_files import require_dir

        require_dir(str(options["model_dir"]), what=f"{where}_options.model_dir",
                    hint="a folder written by save_pretrained")
