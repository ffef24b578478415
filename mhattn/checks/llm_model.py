"""The doors of :class:`mhattn.llm.LlamaConfig` and :class:`mhattn.llm.LlamaModel`: sizes, weights, ids, text.

The model's own calls to its attention layers are checked by the layers; these checks come
first, at the model's door, so that every error names what the caller passed: the ids, a
head to ablate, a weight by its file name.
"""

import math

import numpy as np

from .model import ablate as check_ablate
from .module import head_counts
from .optional import require
from .positions import count, rope_base_value
from .values import finite, flag, float_dtype, plain_array, positive_int, real_number
from .values import seed as check_seed

MAX_WEIGHTS_BYTES = 2**31  #: the most that ``need_weights=True`` may return (every block's and head's weights)
PAIRINGS = ("interleaved", "half")


def config_init_args(self, vocab, d_model, num_layers, num_heads, num_kv_heads, d_ff, rope_base, rope, rms_eps):
    """``LlamaConfig(...)``: positive sizes, heads that divide, an even ``d_k``, a RoPE pairing, ``rms_eps > 0``."""
    vocab, num_layers, d_ff = (positive_int(name, value) for name, value in
                               (("vocab", vocab), ("num_layers", num_layers), ("d_ff", d_ff)))
    d_model, num_heads, num_kv_heads = head_counts(d_model, num_heads, num_kv_heads)
    if not isinstance(rope, str) or rope not in PAIRINGS:
        error = ValueError if isinstance(rope, str) else TypeError
        raise error(f"rope must be 'interleaved' (pairs 2i and 2i + 1: llama.cpp's files) or 'half' (pairs i and "
                    f"i + d_k / 2: Hugging Face's checkpoints); got {rope!r}")
    if (d_model // num_heads) % 2:
        raise ValueError(f"num_heads must leave an even d_k = d_model // num_heads for RoPE (it turns pairs of "
                         f"coordinates); got d_k = {d_model // num_heads}")
    rms_eps = real_number("rms_eps", rms_eps, "a finite float > 0")
    if not (math.isfinite(rms_eps) and rms_eps > 0):
        raise ValueError(f"rms_eps must be a finite float > 0; got {rms_eps}")
    arguments = {"self": self, "vocab": vocab, "d_model": d_model, "num_layers": num_layers, "num_heads": num_heads}
    rope_base = rope_base_value(rope_base, "rope_base")
    return arguments | {"num_kv_heads": num_kv_heads, "d_ff": d_ff, "rope_base": rope_base, "rope": rope,
                        "rms_eps": rms_eps}, None


def sizes_of(config):
    """``config``'s fields, re-checked (a config's attributes can be changed after it was built)."""
    names = ("vocab", "d_model", "num_layers", "num_heads", "num_kv_heads", "d_ff", "rope_base", "rope", "rms_eps")
    if not all(hasattr(config, name) for name in names):
        raise TypeError(f"config must be an mhattn.llm.LlamaConfig; got {type(config).__name__}")
    checked, _ = config_init_args(None, *(getattr(config, name) for name in names))
    return checked


def weight_shapes(sizes):
    """``{GGUF name: (out, in) shape}`` of every weight a Llama of these sizes holds."""
    d, f, kv_width = sizes["d_model"], sizes["d_ff"], sizes["num_kv_heads"] * (sizes["d_model"] // sizes["num_heads"])
    shapes = {"token_embd.weight": (sizes["vocab"], d), "output_norm.weight": (d,)}
    per_block = {"attn_norm": (d,), "attn_q": (d, d), "attn_k": (kv_width, d), "attn_v": (kv_width, d),
                 "attn_output": (d, d), "ffn_norm": (d,), "ffn_gate": (f, d), "ffn_up": (f, d), "ffn_down": (d, f)}
    for i in range(sizes["num_layers"]):
        shapes |= {f"blk.{i}.{part}.weight": shape for part, shape in per_block.items()}
    return shapes


def llama_weights(weights, sizes):
    """``weights`` as ``{name: array}``: every name of :func:`weight_shapes`, finite floats of one dtype."""
    if not hasattr(weights, "keys") or not hasattr(weights, "__getitem__"):
        raise TypeError(f"weights must be a dict of arrays by their GGUF names; got {type(weights).__name__}")
    shapes = weight_shapes(sizes)
    missing, extra = sorted(set(shapes) - set(weights.keys())), sorted(set(weights.keys()) - set(shapes))
    if missing or extra:
        raise ValueError(f"weights must hold exactly the {len(shapes)} arrays of this config; missing "
                         f"{missing[:4]}{' ...' if len(missing) > 4 else ''}, not used {extra[:4]}"
                         f"{' ...' if len(extra) > 4 else ''}")
    arrays, dtypes = {}, set()
    for name, shape in shapes.items():
        value = weights[name]
        if isinstance(value, np.ma.MaskedArray) or not isinstance(value, np.ndarray):
            raise TypeError(f"weights[{name!r}] must be a NumPy array; got {type(value).__name__}")
        if value.dtype not in (np.float32, np.float64):
            raise TypeError(f"weights[{name!r}] must be float32 or float64; got {value.dtype}")
        if value.shape != shape:
            raise ValueError(f"weights[{name!r}] must have shape {shape}; got {value.shape}")
        arrays[name] = finite(f"weights[{name!r}]", value)
        dtypes.add(value.dtype)
    if len(dtypes) > 1:
        raise TypeError(f"weights must all have one dtype (the model computes in it); got {sorted(map(str, dtypes))}")
    return arrays


def llama_init_args(self, config, weights, tokenizer):
    """``LlamaModel(config, weights, tokenizer=...)``."""
    sizes = sizes_of(config)
    if tokenizer is not None and not (callable(getattr(tokenizer, "encode", None)) and
                                      callable(getattr(tokenizer, "decode", None))):
        raise TypeError(f"tokenizer must be None or have encode and decode methods; got {type(tokenizer).__name__}")
    return {"self": self, "config": config, "weights": llama_weights(weights, sizes), "tokenizer": tokenizer}, None


def no_args(self):
    """A method without arguments."""
    return {"self": self}, None


def token_ids(name, value, vocab, ndims=(1, 2)):
    """``value`` as an int array of ``ndims`` axes, at least one token, every id in ``[0, vocab)``."""
    layouts = " or ".join({1: "(seq,)", 2: "(batch, seq)"}[n] for n in ndims)
    expected = f"integer token ids in [0, {vocab}) of shape {layouts}"
    array = plain_array(name, value, expected)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be {expected}; got dtype {array.dtype}")
    if array.ndim not in ndims or array.size == 0:
        raise ValueError(f"{name} must be {expected}, at least one token; got shape {array.shape}")
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"{name} must be {expected}; got ids from {array.min()} to {array.max()}")
    return array.astype(np.int64, copy=False)


def llama_forward_args(self, ids, need_weights, ablate):
    """:meth:`LlamaModel.forward`: ids in the vocabulary, a flag, heads that exist, weights that fit in memory."""
    config = self.config
    ids = token_ids("ids", ids, config.vocab)
    need_weights = flag("need_weights", need_weights)
    ablate = check_ablate(ablate, config.num_layers, config.num_heads)
    batch, seq = (1, *ids.shape) if ids.ndim == 1 else ids.shape
    nbytes = batch * config.num_layers * config.num_heads * seq * seq * self.embed.dtype.itemsize
    if need_weights and nbytes > MAX_WEIGHTS_BYTES:
        raise ValueError(f"need_weights=True would return {nbytes / 2**30:.3g} GiB of attention weights for ids of "
                         f"shape {ids.shape}; pass fewer or shorter sequences, or need_weights=False")
    return {"self": self, "ids": ids, "need_weights": need_weights, "ablate": ablate}, None


def llama_generate_args(self, ids, num_tokens, temperature, seed, use_cache):
    """:meth:`LlamaModel.generate`: one prompt, a count, a finite temperature >= 0, a seed, a flag."""
    ids = token_ids("ids", ids, self.config.vocab, ndims=(1,))
    temperature = real_number("temperature", temperature, "a float >= 0")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite float >= 0; got {temperature}")
    return {"self": self, "ids": ids, "num_tokens": count("num_tokens", num_tokens), "temperature": temperature,
            "seed": check_seed(seed), "use_cache": flag("use_cache", use_cache)}, None


def _tokenizer_of(self):
    if self.tokenizer is None:
        raise ValueError("this model has no tokenizer: build it with LlamaModel(config, weights, tokenizer=...), or "
                         "use mhattn.llm.load_smollm2() or tiny_llama(), which come with one")
    require("tokenizers")


def tokenize_args(self, string):
    """:meth:`LlamaModel.tokenize`: a ``str``, and a tokenizer to read it."""
    if not isinstance(string, str):
        raise TypeError(f"string must be a str; got {type(string).__name__}")
    _tokenizer_of(self)
    return {"self": self, "string": string}, None


def detokenize_args(self, ids):
    """:meth:`LlamaModel.detokenize`: one sequence of ids in the vocabulary (none is fine)."""
    if isinstance(ids, (list, tuple)) and len(ids) == 0:
        ids = np.zeros(0, dtype=np.int64)
    if isinstance(ids, np.ndarray) and ids.shape == (0,) and ids.dtype.kind in "iu":
        checked = ids
    else:
        checked = token_ids("ids", ids, self.config.vocab, ndims=(1,))
    _tokenizer_of(self)
    return {"self": self, "ids": checked}, None


def tiny_args(seed, rope, dtype):
    """:func:`mhattn.llm.tiny_llama`: a seed, a pairing, float32 or float64."""
    sizes_rope = config_init_args(None, 1, 2, 1, 1, 1, 1, 10000.0, rope, 1e-5)[0]["rope"]
    return {"seed": check_seed(seed), "rope": sizes_rope, "dtype": float_dtype(dtype)}, None

