"""Checks at the doors of :class:`mhattn.learn.model.InductionModel` and its checkpoints.

The model's own calls to its layers are checked by the layers (see :mod:`mhattn.checks`),
but their messages name the layer's arguments (``x``, ``W_qkv``). These checks come first,
at the model's door, so that every error names what the caller passed: the tokens, a head
to ablate, a parameter by its checkpoint name, the checkpoint file.
"""

import numbers
import os
import re
import uuid
import zipfile
import zlib

import numpy as np

from .values import finite

_LAYER_KEY = re.compile(r"layer(\d+)\.(.*)")
_LAYER_WEIGHTS = ("W_qkv", "W_o")


def tokens(value, vocab, max_len):
    """``value`` as an int array of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error."""
    expected = f"integer ids in [0, {vocab}), shape (seq_len,) or (batch, seq_len), 1 <= seq_len <= max_len = {max_len}"
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"tokens must be {expected}; got a ragged nested sequence (rows of different lengths): "
                         "pad them to one length, or pass one sequence at a time") from None
    if array.ndim not in (1, 2):
        raise ValueError(f"tokens must be {expected}; got shape {array.shape}")
    if array.shape[-1] == 0 or array.shape[-1] > max_len:
        raise ValueError(f"tokens must be {expected}; got seq_len = {array.shape[-1]} (shape {array.shape})")
    if array.size == 0:
        raise ValueError(f"tokens must be {expected}, at least one sequence; got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"tokens must be {expected}; got dtype {array.dtype}")
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"tokens must be {expected}; got values {array.min()} to {array.max()}")
    return array


def _index(name, value, count):
    allowed = "None or " if name == "head" else ""  # head=None: the whole layer
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        kind = type(value).__name__
        raise TypeError(f"ablate: {name} must be {allowed}an int in [0, {count - 1}]; got {value!r} of type {kind}")
    if not 0 <= value < count:
        raise ValueError(f"ablate: {name} must be {allowed}in [0, {count - 1}]; got {value}")
    return int(value)


def ablate(value, num_layers, num_heads):
    """``value`` as a list of ``(layer, head or None)`` pairs, or a clear error."""
    try:
        pairs = list(value)
    except TypeError:
        raise TypeError(f"ablate must be an iterable of (layer, head) pairs; got {value!r}") from None
    checked = []
    for pair in pairs:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"ablate must hold (layer, head) pairs (head=None: the whole layer); got {pair!r}")
        layer, head = pair
        layer = _index("layer", layer, num_layers)
        checked.append((layer, None if head is None else _index("head", head, num_heads)))
    return checked


def parameters(model):
    """Check every parameter of ``model``: a finite float array of its shape, named as in the checkpoint."""
    shapes = expected_shapes(len(model.layers), model.vocab, model.max_len, model.d_model)
    for name, value in model.parameters().items():
        array = np.asarray(value)
        if array.dtype.kind != "f":
            raise TypeError(f"InductionModel parameter {name} must be a float array; got dtype {array.dtype}")
        if array.shape != shapes[name]:
            raise ValueError(f"InductionModel parameter {name} must have shape {shapes[name]}; got {array.shape}")
        finite(f"InductionModel parameter {name}", array)


def scored_batch(model, tokens, n):
    """``(tokens, n)`` of a training batch, checked: ``(batch, seq_len)`` ids and ``(batch,)`` lengths.

    Positions ``n`` to ``2n - 2`` predict tokens up to ``2n - 1``, so ``1 <= n <= seq_len // 2``.
    The model's parameters are checked too.
    """
    tokens = model.check_tokens(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a batch of shape (batch, seq_len); got shape {tokens.shape}")
    n = np.asarray(n)
    if n.dtype.kind not in "iu" or n.shape != tokens.shape[:1]:
        raise ValueError(f"n must be ints of shape ({tokens.shape[0]},), one per sequence; got {n.dtype} {n.shape}")
    seq_len = tokens.shape[1]
    if n.min() < 1 or n.max() > seq_len // 2:
        raise ValueError(f"n must be in [1, seq_len // 2 = {seq_len // 2}]; got {n.min()} to {n.max()}")
    parameters(model)
    return tokens, n


def expected_shapes(num_layers, vocab, max_len, d_model):
    """Every parameter's shape by its checkpoint name."""
    shapes = {"embed": (vocab, d_model), "pos": (max_len, d_model), "unembed": (d_model, vocab)}
    for i in range(num_layers):
        shapes[f"layer{i}.W_qkv"], shapes[f"layer{i}.W_o"] = (d_model, 3 * d_model), (d_model, d_model)
    return shapes


# --- checkpoints ---------------------------------------------------------------------------


def checkpoint_path(path):
    """The file a checkpoint at ``path`` goes to: ``.npz`` appended as ``np.savez`` does, never a folder."""
    path = os.fspath(path)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    name = path if path.endswith(".npz") else path + ".npz"
    if os.path.isdir(path) or os.path.isdir(name) or os.path.basename(path) in ("", ".", ".."):
        example = os.path.join(path, "model.npz")
        raise IsADirectoryError(f"checkpoint path {path!r} is a folder; give a file name, e.g. {example!r}")
    return name


def check_extra(extra, reserved):
    """Refuse extras that would overwrite a parameter, ``num_heads`` or the history, or need pickle."""
    arrays = {}
    for name, value in extra.items():
        if name in reserved or name.startswith("history.") or _LAYER_KEY.fullmatch(name):
            raise ValueError(f"save: extra {name!r} collides with the model's own {name!r} in the checkpoint; "
                             "give it another name")
        array = np.asarray(value)
        if array.dtype.kind not in "biufcSU":
            raise TypeError(f"save: extra {name!r} must be numbers or text (a checkpoint holds no pickled "
                            f"objects); got {value!r} of dtype {array.dtype}")
        arrays[name] = array
    return arrays


def write_atomic(path, arrays):
    """Write ``arrays`` to ``path`` as ``.npz``: a temporary file in the same folder, then ``os.replace``.

    An interrupted write leaves the previous file as it was. Returns the path written.
    """
    path = checkpoint_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(descriptor, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def read_checkpoint(path):
    """Every array of the checkpoint at ``path``, loaded without pickle, or an error naming the file."""
    name = os.fspath(path)
    try:
        data = np.load(path, allow_pickle=False)  # an ndarray for a .npy file, an NpzFile for an archive
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise TypeError(f"{type(data).__name__}, not an .npz archive")
        with data:
            arrays = {}
            for key in data.files:
                try:
                    arrays[key] = data[key]
                except ValueError:
                    raise _bad(name, f"{key} holds Python objects, not numbers (no pickles in a checkpoint)") from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as error:
        raise type(error)(f"checkpoint {name}: {error.strerror or error}") from None
    except (OSError, EOFError, TypeError, ValueError, zipfile.BadZipFile, zlib.error) as error:
        if isinstance(error, ValueError) and str(error).startswith("checkpoint "):
            raise
        raise _bad(name, "not a readable .npz archive (truncated, corrupted or another kind of file); "
                   "write checkpoints with InductionModel.save or python -m mhattn.train") from None
    return arrays


def _bad(name, what):
    return ValueError(f"checkpoint {name}: {what}")


def checkpoint_arrays(name, arrays):
    """Validate a checkpoint's arrays; return ``(sizes, parameters, history)``.

    ``sizes`` is ``{"num_layers", "vocab", "max_len", "d_model", "num_heads"}``; the
    parameters are float64 copies, checked for their names, shapes, dtype and finiteness.
    """
    required = ("embed", "pos", "unembed", "num_heads", "layer0.W_qkv", "layer0.W_o")
    missing = [key for key in required if key not in arrays]
    if missing:
        raise _bad(name, f"missing {', '.join(missing)}; found {sorted(arrays)}")
    layers = {}
    for key in arrays:
        match = _LAYER_KEY.fullmatch(key)
        if match:
            if match.group(2) not in _LAYER_WEIGHTS:
                raise _bad(name, f"unknown layer entry {key} (a layer holds {' and '.join(_LAYER_WEIGHTS)})")
            layers.setdefault(int(match.group(1)), set()).add(match.group(2))
    num_layers = max(layers) + 1
    for i in range(num_layers):
        for weight in _LAYER_WEIGHTS:
            if weight not in layers.get(i, ()):
                raise _bad(name, f"missing layer{i}.{weight} (layers 0 to {num_layers - 1} are present)")
    for key in ("embed", "pos", "unembed"):
        if arrays[key].ndim != 2:
            raise _bad(name, f"{key} must be 2-D; got shape {arrays[key].shape}")
    vocab, d_model = arrays["embed"].shape
    sizes = {"num_layers": num_layers, "vocab": vocab, "max_len": arrays["pos"].shape[0], "d_model": d_model}
    sizes["num_heads"] = _num_heads(name, arrays["num_heads"], d_model)
    params = {}
    for key, shape in expected_shapes(num_layers, vocab, sizes["max_len"], d_model).items():
        array = arrays[key]
        if array.dtype.kind != "f":
            raise _bad(name, f"{key} must hold floats; got dtype {array.dtype}")
        if array.shape != shape:
            raise _bad(name, f"{key} has shape {array.shape}, expected {shape} (from embed {arrays['embed'].shape})")
        if not np.isfinite(array).all():
            raise _bad(name, f"{key} holds {np.count_nonzero(~np.isfinite(array))} NaN or infinite values")
        params[key] = array.astype(np.float64)
    history = {key[len("history."):]: array for key, array in arrays.items() if key.startswith("history.")}
    return sizes, params, history


def _num_heads(name, array, d_model):
    if array.shape != () or array.dtype.kind not in "iu":
        raise _bad(name, f"num_heads must be one integer; got {array!r}")
    num_heads = int(array)
    if num_heads <= 0 or d_model % num_heads:
        raise _bad(name, f"num_heads = {num_heads} must be positive and divide d_model = {d_model}")
    return num_heads
