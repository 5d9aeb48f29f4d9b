"""Tiny random-weight transformers models, built offline from config objects.

Real checkpoints are gigabytes and need the network; the hf backends only need *a* folder that
``save_pretrained`` wrote. These builders make one in well under a second: a 2-layer ViT
classifier, and an Idefics3 (the SmolVLM architecture) image-text-to-text model whose
processor uses a word-level tokenizer built here from a dozen words. Weights are random, so
outputs are noise: tests check wiring, shapes, labels and determinism, not quality.

The tokenizer knows only :data:`VLM_WORDS` (plus specials and ``<unk>``), so whatever the
random VLM generates decodes into those words: parsed tags can then be checked against them.

``scripted=True`` overwrites a few weights so the VLM answers :data:`SCRIPTED_ANSWER` whatever
it is shown: attention and MLP outputs are zeroed, leaving each position's hidden state equal to
its token's (normalized) embedding, so the model becomes a bigram table. Embeddings are one-hot
per token of the answer and ``lm_head`` maps each token to the next one. It is still a real
model run by ``generate`` and decoded by the processor, so the whole ask → decode → parse path
is exercised on a known answer. ``answer="..."`` scripts that text instead: the vocabulary
gains it as one token (a prompt can never spell it, since prompts are split into words), so
the model can say what the word-level vocabulary cannot, such as a JSON object.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import torch

#: Every non-special token of the tiny VLM's vocabulary.
VLM_WORDS = ("cat", "dog", "red", "car", "tree", "person", "the", "a", "and", ",", ".")
#: Special tokens Idefics3's processor looks up (image placeholders, tile markers, turn end).
_VLM_SPECIALS = (
    "<unk>", "<pad>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>",
    "<image>", "<global-img>",
    *(f"<row_{row}_col_{col}>" for row in range(1, 7) for col in range(1, 7)),
)
#: A SmolVLM-style chat template written for these tests (real folders ship their own).
CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)
#: What the scripted VLM says: every prompt ends in "Assistant:", unknown words, so "<unk>".
SCRIPTED_ANSWER = "cat , dog and the red car ."
_SCRIPT = ("<unk>", "cat", ",", "dog", "and", "the", "red", "car", ".", "<end_of_utterance>")
#: Idefics3 input side, patch side and pixel-shuffle factor → (32/8)^2 / 2^2 = 4 image tokens.
_IMAGE_SIDE, _PATCH, _SCALE = 32, 8, 2


def build_tiny_vit(
    folder: Path,
    *,
    labels: tuple[str, ...] = ("cat", "dog", "red car", "tabby, tabby cat"),
    seed: int = 0,
    multi_label: bool = False,
) -> Path:
    """A 2-layer ViT image classifier (32x32 input) with ``labels`` in ``folder``."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessorPil

    config = ViTConfig(
        image_size=_IMAGE_SIDE, patch_size=_PATCH, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64,
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
        problem_type="multi_label_classification" if multi_label else None,
    )
    torch.manual_seed(seed)
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessorPil(size={"height": _IMAGE_SIDE, "width": _IMAGE_SIDE}).save_pretrained(
        folder
    )
    return folder


def tiny_word_tokenizer(extra: tuple[str, ...] = ()) -> Any:
    """A fast tokenizer over :data:`VLM_WORDS` (and ``extra`` tokens, kept whole): word-level,
    split on whitespace/punctuation."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate((*_VLM_SPECIALS, *VLM_WORDS, *extra))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    # Marked special so that decoding with skip_special_tokens drops them, as in real folders.
    backend.add_special_tokens(list(_VLM_SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>",
        bos_token="<|im_start|>", eos_token="<end_of_utterance>",
    )


def build_tiny_idefics3(
    folder: Path, *, seed: int = 0, chat_template: bool = True, scripted: bool = False,
    answer: str | None = None,
) -> Path:
    """A 1-layer Idefics3 (SigLIP-style vision + Llama text) VLM with its processor.

    ``scripted``: answer :data:`SCRIPTED_ANSWER` to everything; ``answer``: answer that text
    to everything, whatever its characters (see the module docstring).
    """
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
        LlamaConfig,
    )
    from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig

    tokenizer = tiny_word_tokenizer(() if answer is None else (answer,))
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": _IMAGE_SIDE}, max_image_size={"longest_edge": _IMAGE_SIDE},
        do_image_splitting=False,
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer,
        image_seq_len=(_IMAGE_SIDE // _PATCH) ** 2 // _SCALE**2,
        chat_template=CHAT_TEMPLATE if chat_template else None,
    )
    vision = Idefics3VisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        image_size=_IMAGE_SIDE, patch_size=_PATCH,
    )
    text = LlamaConfig(
        vocab_size=len(processor.tokenizer), hidden_size=32, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=512, pad_token_id=processor.tokenizer.pad_token_id,
        bos_token_id=processor.tokenizer.bos_token_id,
        eos_token_id=processor.tokenizer.eos_token_id,
    )
    config = Idefics3Config(
        vision_config=vision, text_config=text, scale_factor=_SCALE,
        image_token_id=processor.image_token_id,
    )
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config)
    if answer is not None:
        _script_answer(model, processor.tokenizer, ("<unk>", answer, "<end_of_utterance>"))
    elif scripted:
        _script_answer(model, processor.tokenizer, _SCRIPT)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _script_answer(model: Any, tokenizer: Any, script: tuple[str, ...]) -> None:
    """Turn the text model into the bigram table ``script[i] → script[i + 1]``.

    ``script`` starts with the prompt's last token (``<unk>``) and ends with the turn end.
    """
    text_model = model.model.text_model
    ids = [tokenizer.convert_tokens_to_ids(token) for token in script]
    with torch.no_grad():
        for layer in text_model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        text_model.norm.weight.fill_(1.0)
        embeddings = text_model.embed_tokens.weight
        embeddings.zero_()
        model.lm_head.weight.zero_()
        for dim, (token_id, next_id) in enumerate(itertools.pairwise(ids)):
            embeddings[token_id, dim] = 1.0
            model.lm_head.weight[next_id, dim] = 10.0
