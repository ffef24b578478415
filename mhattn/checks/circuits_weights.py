"""The arguments of the measures read from a model's weights (:mod:`mhattn.learn.weight_circuits`).

A layer and a head of the model (indices from 0: no negative index counts from the end), the
matrices whose copying or composition score is asked for, and which composition. A score that
would be 0 / 0 (a head that writes or reads nothing) is refused here, with the head named.
"""

import numpy as np

from .learning import model_like, real
from .values import index, positive_int
from .values import seed as check_seed

#: for each kind of composition, the name of the later head's matrix that reads the stream
READERS = {"K": "QK", "Q": "QK", "V": "OV"}


def layer_head(model, layer, head, names=("layer", "head")):
    """``(layer, head)`` as indices into ``model.layers`` and its heads; no negative index counts from the end."""
    return index(names[0], layer, len(model.layers)), index(names[1], head, model.num_heads)


def head_args(model, layer, head):
    """Arguments of :func:`~mhattn.learn.weight_circuits.head_weights` and ``ov_circuit``."""
    model = model_like(model)
    layer, head = layer_head(model, layer, head)
    return {"model": model, "layer": layer, "head": head}, None


def qk_args(model, layer, head, key_through):
    """Arguments of :func:`~mhattn.learn.weight_circuits.qk_circuit`: ``key_through`` None or a ``(layer, head)``."""
    arguments, _ = head_args(model, layer, head)
    if key_through is not None:
        if isinstance(key_through, (str, bytes)) or not hasattr(key_through, "__len__") or len(key_through) != 2:
            raise TypeError(f"key_through must be None or a (layer, head) pair; got {key_through!r}")
        key_through = layer_head(model, *key_through, names=("key_through's layer", "key_through's head"))
    return arguments | {"key_through": key_through}, None


def copying_args(ov):
    """Arguments of :func:`~mhattn.learn.weight_circuits.copying_score`: a square matrix with a nonzero eigenvalue."""
    ov = real("ov", ov, 2, "(vocab, vocab)")
    if ov.shape[0] != ov.shape[1]:
        raise ValueError(f"ov must be a square matrix (vocab, vocab); got shape {ov.shape}")
    if not np.abs(np.linalg.eigvals(ov)).sum() > 0:  # a zero matrix (a head that writes nothing), or a nilpotent one
        raise ValueError("ov has only zero eigenvalues (a head that writes nothing?): its copying score is 0 / 0")
    return {"ov": ov}, None


def composition_args(left, right):
    """Arguments of :func:`~mhattn.learn.weight_circuits.composition_score`: two nonzero matrices that multiply."""
    left, right = real("left", left, 2, "(d, d)"), real("right", right, 2, "(d, d)")
    if left.shape[1] != right.shape[0]:
        raise ValueError(f"left @ right needs left.shape[1] == right.shape[0]; got left {left.shape} and "
                         f"right {right.shape}")
    for name, matrix in (("left", left), ("right", right)):
        if not np.abs(matrix).max() > 0:
            raise ValueError(f"{name} must not be zero: a head that writes (or reads) nothing composes with "
                             "nothing, and its score would be 0 / 0")
    return {"left": left, "right": right}, None


def k_composition_args(model, layer0, layer1):
    """Arguments of :func:`~mhattn.learn.weight_circuits.k_composition_scores`: an earlier and a later layer."""
    return _layer_pair(model, layer0, layer1, "K"), None


def composition_scores_args(model, kind, layer0, layer1):
    """Arguments of :func:`~mhattn.learn.weight_circuits.composition_scores`: ``kind`` one of Q, K, V."""
    if not isinstance(kind, str) or kind not in READERS:
        error = ValueError if isinstance(kind, str) else TypeError
        raise error(f"kind must be 'Q', 'K' or 'V'; got {kind!r}")
    return _layer_pair(model, layer0, layer1, kind) | {"kind": kind}, None


def _layer_pair(model, layer0, layer1, kind):
    """``{model, layer0, layer1}``: an earlier layer whose heads all write, a later one whose heads all read."""
    model = model_like(model)
    layer0 = index("layer0", layer0, len(model.layers))
    layer1 = index("layer1", layer1, len(model.layers))
    if layer0 >= layer1:
        raise ValueError(f"layer0 must come before layer1 (an earlier head writes, a later one reads); got "
                         f"layer0 = {layer0}, layer1 = {layer1} in a model of {len(model.layers)} layers")
    live_heads(model, layer0, layer1, kind)
    return {"model": model, "layer0": layer0, "layer1": layer1}


def live_heads(model, layer0, layer1, kind):
    """Raise unless every head of ``layer0`` writes (OV) and every head of ``layer1`` reads (its ``kind``'s matrix)."""
    for layer, name in ((layer0, "OV"), (layer1, READERS[kind])):
        for head in range(model.num_heads):
            W_q, W_k, W_v, W_o = _head_slices(model.layers[layer], head)
            matrix = W_v @ W_o if name == "OV" else W_k @ W_q.T  # (d_model, d_model)
            if not np.abs(matrix).max() > 0:
                raise ValueError(f"head {head} of layer {layer} is dead (its {name} matrix is zero): it has no "
                                 "composition score")


def _head_slices(layer, head):
    """``(W_Q, W_K, W_V, W_O)`` of one head of a model's layer (queries, keys, values side by side in ``W_qkv``).

    A model's layers have as many key/value heads as query heads (its checkpoints hold no
    other), so each block of ``W_qkv`` is ``d_model`` wide.
    """
    columns = slice(head * layer.d_k, (head + 1) * layer.d_k)
    W_q, W_k, W_v = (block[:, columns] for block in np.split(np.asarray(layer.W_qkv), 3, axis=-1))
    return W_q, W_k, W_v, np.asarray(layer.W_o)[columns]


def composition_baseline_args(d_model, rank, draws, seed):
    """Arguments of :func:`~mhattn.learn.weight_circuits.composition_baseline`: sizes and a seed."""
    return {"d_model": positive_int("d_model", d_model), "rank": positive_int("rank", rank),
            "draws": positive_int("draws", draws), "seed": check_seed(seed)}, None
