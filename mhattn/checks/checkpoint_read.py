"""What :meth:`mhattn.learn.model.InductionModel.load` takes from a checkpoint, checked before and after reading.

Before any data is read, every member's header is checked (:class:`.checkpoint.Archive`), and
every member the model uses must have the dtype and the shape that ``embed`` and ``pos`` give
it; only then are those members read, and their values checked: finite weights, a head count
that divides ``d_model``, RoPE settings the layers can run.
"""

import math

import numpy as np

from .checkpoint import (
    MAX_HISTORY_VALUES,
    MAX_PARAMETER_BYTES,
    MAX_TEXT,
    ROPE_STORED,
    Archive,
    bad,
    expected_shapes,
    named_members,
)


def read_checkpoint(path):
    """``(sizes, parameters, history)`` of the checkpoint at ``path``, or an error naming the file and the fault.

    ``sizes`` is ``{"num_layers", "vocab", "max_len", "d_model", "num_heads", "rope"}``, with
    ``rope`` a list of ``(rope, rope_base)``, one per layer, as the layer's arguments (``rope``
    False, ``"half"`` or ``"interleaved"``); the parameters are float64 arrays by their
    checkpoint names; the history maps each name to its array.
    """
    with Archive(path) as archive:
        name = archive.name
        used, num_layers = named_members(name, archive.members)
        headers = {key: archive.header(key) for key in archive.members}  # every member: no pickle anywhere
        sizes, shapes = _sizes(name, headers, num_layers)
        _check_headers(name, headers, used, shapes)
        arrays = {key: archive.read(key, headers[key]) for key in used}
    params = {}
    for key in shapes:
        if not np.isfinite(arrays[key]).all():
            raise bad(name, f"{key} holds {np.count_nonzero(~np.isfinite(arrays[key]))} NaN or infinite values")
        params[key] = arrays[key].astype(np.float64)
    sizes["num_heads"] = _num_heads(name, arrays["num_heads"], sizes["d_model"])
    d_k = sizes["d_model"] // sizes["num_heads"]
    sizes["rope"] = [_rope_settings(name, arrays, i, d_k) for i in range(num_layers)]
    history = {key[len("history."):]: arrays[key] for key in used if key.startswith("history.")}
    return sizes, params, history


def _sizes(name, headers, num_layers):
    """``(sizes, expected shapes)`` from the headers of ``embed`` and ``pos``."""
    for key in ("embed", "pos"):
        if len(headers[key][0]) != 2:
            raise bad(name, f"{key} must be 2-D; got shape {headers[key][0]}")
    (vocab, d_model), max_len = headers["embed"][0], headers["pos"][0][0]
    sizes = {"num_layers": num_layers, "vocab": vocab, "max_len": max_len, "d_model": d_model}
    for size in ("vocab", "max_len", "d_model"):
        if sizes[size] < 1:
            raise bad(name, f"{size} must be >= 1; got {sizes[size]} (embed {headers['embed'][0]}, pos "
                      f"{headers['pos'][0]})")
    return sizes, expected_shapes(num_layers, vocab, max_len, d_model)


def _check_headers(name, headers, used, shapes):
    """Each used member's dtype and shape, from its header alone: nothing is read that the model cannot use."""
    total = 0
    for key, shape in shapes.items():
        found, _, dtype, _, _ = headers[key]
        if dtype.kind != "f":
            raise bad(name, f"{key} must hold floats; got dtype {dtype}")
        if found != shape:
            d_model = shape[0]
            grouped = key.endswith("W_qkv") and found[:1] == (d_model,) and d_model < found[1] < 3 * d_model
            why = (": a grouped-query layer (fewer key/value heads than query heads), which a checkpoint does not "
                   "hold" if grouped else "")
            raise bad(name, f"{key} has shape {found}, expected {shape} (from embed {headers['embed'][0]}){why}")
        total += 8 * math.prod(found)  # as float64, what the model holds
    if total > MAX_PARAMETER_BYTES:
        raise bad(name, f"the weights take {total / 2**30:.3g} GiB as float64; a checkpoint holds at most "
                  f"{MAX_PARAMETER_BYTES / 2**30:.3g} GiB of them")
    history = 0
    for key in used:
        shape, _, dtype, _, _ = headers[key]
        if key.startswith("history."):
            if dtype.kind not in "biuf":
                raise bad(name, f"{key} must hold numbers (a model's history is numbers only); got dtype {dtype}")
            history += math.prod(shape)
        elif key not in shapes:  # num_heads and the layers' settings: one value each
            kinds = {"num_heads": "iu", "rope_base": "f"}.get(key.rpartition(".")[2], "bU")
            if shape != () or dtype.kind not in kinds or dtype.itemsize > 4 * MAX_TEXT:
                raise bad(name, f"{key} must be one {'integer' if key == 'num_heads' else 'value'}; got shape "
                          f"{shape} of {dtype}")
    if history > MAX_HISTORY_VALUES:
        raise bad(name, f"the history holds {history} numbers; a checkpoint holds at most {MAX_HISTORY_VALUES}")


def _rope_settings(name, arrays, i, d_k):
    """Layer ``i``'s ``(rope, rope_base)`` as the layer's arguments: ``(False, 10000.0)`` where none are stored.

    ``rope`` is stored as text, ``"none"``, ``"half"`` or ``"interleaved"``; a stored bool
    (True = ``"half"``) is read too.
    """
    rope, base = arrays.get(f"layer{i}.rope", np.array("none")), arrays.get(f"layer{i}.rope_base", np.array(10000.0))
    if rope.dtype == np.bool_:
        rope = np.array("half" if rope else "none")
    if str(rope) not in ROPE_STORED:
        raise bad(name, f"layer{i}.rope must be one of {ROPE_STORED}; got {str(rope)!r}")
    if not (np.isfinite(base) and base > 0):
        raise bad(name, f"layer{i}.rope_base must be a finite float > 0; got {float(base)}")
    if str(rope) != "none" and d_k % 2:
        raise bad(name, f"layer{i}.rope = {str(rope)!r} needs an even d_k = d_model // num_heads (RoPE turns "
                  f"pairs of coordinates); got d_k = {d_k}")
    return (False if str(rope) == "none" else str(rope)), float(base)


def _num_heads(name, array, d_model):
    num_heads = int(array)
    if num_heads <= 0 or d_model % num_heads:
        raise bad(name, f"num_heads = {num_heads} must be positive and divide d_model = {d_model}")
    return num_heads
