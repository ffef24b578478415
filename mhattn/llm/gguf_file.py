"""What a GGUF file (llama.cpp's format) holds: the sizes, the weights as float32, the tokenizer.

Read with the ``gguf`` package (the ``chapter`` extra). Metadata keys are llama.cpp's
(``llama.block_count``, ``tokenizer.ggml.tokens``, ...). Quantised matrices (SmolLM2's file
stores most in Q4_1: 4 bits per weight, a scale and a minimum per block of 32) are expanded to
float32, in ``nn.Linear``'s ``(out, in)`` layout.
"""

import numpy as np

from ..checks.optional import require
from .tokenizer import ByteLevelTokenizer

CONTROL = 3  #: ``tokenizer.ggml.token_type`` of a special token, matched whole in a text


def read_gguf(path):
    """``(sizes, weights, tokenizer)`` of the Llama GGUF file at ``path``.

    ``sizes`` holds :class:`~mhattn.llm.config.LlamaConfig`'s arguments (``rope="interleaved"``:
    llama.cpp's converter reorders ``W_q``'s and ``W_k``'s rows for that pairing); ``weights``
    maps each tensor's name to a float32 array.
    """
    gguf = require("gguf")
    reader = gguf.GGUFReader(path)
    field = lambda key: reader.fields[key].contents()  # noqa: E731  (one metadata value)
    number = lambda key: float(field(key)) if key.endswith(("freq_base", "epsilon")) else int(field(key))  # noqa: E731
    sizes = {"vocab": len(reader.fields["tokenizer.ggml.tokens"].data), "d_model": number("llama.embedding_length"),
             "num_layers": number("llama.block_count"), "num_heads": number("llama.attention.head_count"),
             "num_kv_heads": number("llama.attention.head_count_kv"), "d_ff": number("llama.feed_forward_length"),
             "rope_base": number("llama.rope.freq_base"), "rope": "interleaved",
             "rms_eps": number("llama.attention.layer_norm_rms_epsilon")}
    weights = {}
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)  # (out, in), or (d_model,) for a norm
        weights[tensor.name] = np.array(values, dtype=np.float32)  # a copy: nothing left pointing into the file
    types = field("tokenizer.ggml.token_type")
    tokens = field("tokenizer.ggml.tokens")
    tokenizer = ByteLevelTokenizer(tokens, field("tokenizer.ggml.merges"),
                                   [i for i, kind in enumerate(types) if kind == CONTROL],
                                   split_digits=field("tokenizer.ggml.pre") == "smollm")
    return sizes, weights, tokenizer
