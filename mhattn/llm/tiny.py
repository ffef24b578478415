"""A tiny Llama with random weights: the real model's code and shapes at a size that runs in milliseconds.

For examples, tests and exercises: two blocks, ``d_model = 64``, four query heads sharing two
key/value heads, and a tokenizer with one token per byte behind SmolLM2's three first special
tokens. Its weights are drawn so that its attention is far from uniform (a wrong mask or
pairing shows), not trained: what it writes is noise.
"""

import numpy as np

from .block import block_names
from .config import LlamaConfig
from .model import LlamaModel
from .tokenizer import ByteLevelTokenizer, byte_alphabet

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  #: ids 0, 1, 2, as in SmolLM2


def random_weights(config, seed=0, dtype=np.float32):
    """Weights for ``config`` by their GGUF names: ``N(0, 1 / fan_in)`` matrices, RMSNorm gains near 1.

    The embedding is ``N(0, 0.1**2)``: being tied, a larger one would make every token predict
    itself (its own row scores ``|E_v|**2`` against the others' ``E_u . E_v``).
    """
    rng = np.random.default_rng(seed)
    kv_width = config.num_kv_heads * config.d_k
    d, f = config.d_model, config.d_ff
    shapes = {"attn_q": (d, d), "attn_k": (kv_width, d), "attn_v": (kv_width, d), "attn_output": (d, d),
              "ffn_gate": (f, d), "ffn_up": (f, d), "ffn_down": (d, f)}  # (out, in)
    weights = {"token_embd.weight": 0.1 * rng.standard_normal((config.vocab, d)),
               "output_norm.weight": 1 + 0.1 * rng.standard_normal(d)}
    for i in range(config.num_layers):
        names = block_names(i)
        for part in ("attn_norm", "ffn_norm"):
            weights[names[part]] = 1 + 0.1 * rng.standard_normal(d)
        for part, shape in shapes.items():
            weights[names[part]] = rng.standard_normal(shape) / np.sqrt(shape[1])
    return {name: value.astype(dtype) for name, value in weights.items()}


def tiny_llama(seed=0, *, rope="interleaved", dtype=np.float32):
    """A two-block Llama with random weights (seeded) and a byte tokenizer: 259 tokens, 64 wide.

    ``rope`` is the pairing its attention uses (:class:`LlamaConfig`); ``dtype`` float32 or
    float64, the dtype it computes in.

    Examples
    --------
    >>> model = tiny_llama(seed=0)
    >>> print(model.config)
    blocks           2
    d_model          64
    query heads      4 of d_k = 16
    key/value heads  2 (each serves 2 query heads)
    feed-forward     SwiGLU, d_ff = 128
    RoPE             base 10000, interleaved pairs
    RMSNorm eps      1e-05
    vocabulary       259 tokens, tied unembedding
    """
    config = LlamaConfig(len(SPECIAL) + 256, 64, 2, 4, 2, 128, rope=rope)
    tokenizer = ByteLevelTokenizer(SPECIAL + byte_alphabet(), [], range(len(SPECIAL)), split_digits=False)
    return LlamaModel(config, random_weights(config, seed, dtype), tokenizer=tokenizer)
