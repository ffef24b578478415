"""The doors of :mod:`mhattn.llm.heads`: a model, repeated ids it can read, counts and heads that exist."""

import numpy as np

from .llm_model import token_ids
from .model import ablate as check_ablate
from .values import positive_int, real_array
from .values import seed as check_seed


def llama_model(value):
    """``value`` if it is a :class:`mhattn.llm.LlamaModel` (by its attributes), else ``TypeError``."""
    if not all(hasattr(value, name) for name in ("config", "blocks", "forward", "tokenizer")):
        raise TypeError(f"model must be an mhattn.llm.LlamaModel; got {type(value).__name__}")
    return value


def repeated_ids(model, ids):
    """``ids`` as ``(batch, 2 * half_len)`` token ids whose second half repeats the first, ``half_len >= 2``."""
    ids = token_ids("ids", ids, model.config.vocab, ndims=(2,))
    half = ids.shape[1] // 2
    if ids.shape[1] % 2 or half < 2 or not np.array_equal(ids[:, :half], ids[:, half:]):
        raise ValueError(f"ids must be sequences of 2 * half_len tokens, half_len >= 2, whose second half repeats the "
                         f"first (see induction_ids); got shape {ids.shape}")
    return ids


def induction_ids_args(model, half_len, num_sequences, seed):
    """:func:`mhattn.llm.induction_ids`: ``half_len`` different ordinary tokens fit in the vocabulary."""
    model = llama_model(model)
    half_len, num_sequences = positive_int("half_len", half_len), positive_int("num_sequences", num_sequences)
    special = getattr(model.tokenizer, "special", [])
    ordinary = model.config.vocab - (max(special) + 1 if len(special) else 0)
    if half_len > ordinary:
        raise ValueError(f"half_len must be at most the {ordinary} ordinary tokens (each first half draws different "
                         f"tokens); got {half_len}")
    return {"model": model, "half_len": half_len, "num_sequences": num_sequences, "seed": check_seed(seed)}, None


def head_scores_args(model, ids):
    """:func:`mhattn.llm.head_scores`."""
    model = llama_model(model)
    return {"model": model, "ids": repeated_ids(model, ids)}, None


def repeat_loss_args(model, ids, ablate):
    """:func:`mhattn.llm.repeat_loss`."""
    model = llama_model(model)
    ablate = check_ablate(ablate, model.config.num_layers, model.config.num_heads)
    return {"model": model, "ids": repeated_ids(model, ids), "ablate": ablate}, None


def first_token_share_args(weights):
    """:func:`mhattn.llm.first_token_share`: finite weights ``(batch, num_layers, num_heads, seq, seq)``, seq >= 2."""
    weights = real_array("weights", weights)
    if weights.ndim != 5 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2 or 0 in weights.shape:
        raise ValueError(f"weights must have shape (batch, num_layers, num_heads, seq, seq) with seq >= 2, as "
                         f"LlamaModel.forward(ids, need_weights=True) returns them; got shape {weights.shape}")
    if not np.isfinite(weights).all():
        raise ValueError("weights must be finite (attention weights lie in [0, 1])")
    return {"weights": weights}, None
