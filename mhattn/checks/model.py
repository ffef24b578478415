"""Checks at the doors of :class:`mhattn.learn.model.InductionModel` and its checkpoints.

The model's own calls to its layers are checked by the layers (see :mod:`mhattn.checks`),
but their messages name the layer's arguments (``x``, ``W_qkv``). These checks come first,
at the model's door, so that every error names what the caller passed: the tokens, a head
to ablate, a parameter by its checkpoint name, the checkpoint file.
"""

import os
import re
import signal
import stat
import threading
import uuid
import zipfile
import zlib

import numpy as np

from .values import finite, integer

_LAYER_KEY = re.compile(r"layer(\d+)\.(.*)")
_CANONICAL_LAYER = re.compile(r"0|[1-9]\d{0,5}")  # layer0 .. layer999999, no leading zero
_LAYER_WEIGHTS = ("W_qkv", "W_o")
_LAYER_SETTINGS = ("rope", "rope_base")  # everything else a layer's forward reads, stored beside its weights
_ROPE_STORED = ("none", "half", "interleaved")  #: how a checkpoint writes a layer's RoPE (text, no pickle)
#: a layer's attributes that a checkpoint holds (weights, settings) or derives (sizes from the weights' shapes)
STORED_LAYER_ATTRIBUTES = frozenset(
    _LAYER_WEIGHTS + _LAYER_SETTINGS + ("rope_pairing", "d_model", "num_heads", "num_kv_heads", "d_k")
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SAVEZ_KEYWORDS = ("file", "allow_pickle", "args", "kwds")  # np.savez's own parameters


def tokens(value, vocab, max_len, name="tokens"):
    """``value`` as an int array of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error naming ``name``."""
    expected = f"integer ids in [0, {vocab}), shape (seq_len,) or (batch, seq_len), 1 <= seq_len <= max_len = {max_len}"
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} must be {expected} in a plain ndarray, not a masked array (its mask would be lost)")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be {expected}; got a ragged nested sequence (rows of different lengths): "
                         "pad them to one length, or pass one sequence at a time") from None
    if array.ndim not in (1, 2):
        raise ValueError(f"{name} must be {expected}; got shape {array.shape}")
    if array.shape[-1] == 0 or array.shape[-1] > max_len:
        raise ValueError(f"{name} must be {expected}; got seq_len = {array.shape[-1]} (shape {array.shape})")
    if array.size == 0:
        raise ValueError(f"{name} must be {expected}, at least one sequence; got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be {expected}; got dtype {array.dtype}")
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"{name} must be {expected}; got values {array.min()} to {array.max()}")
    return array


def _index(name, value, count):
    allowed = "None or " if name == "head" else ""  # head=None: the whole layer
    value = integer(f"ablate: {name}", value, f"{allowed}an int in [0, {count - 1}]")
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
    """Refuse extras that would overwrite a parameter, ``num_heads`` or the history, or need pickle.

    A name must be a Python identifier (no ``/`` or ``..``: it becomes a member of the zip
    file), and none of ``np.savez``'s own keywords (``file``, ``allow_pickle``).
    """
    arrays = {}
    for name, value in extra.items():
        if name in reserved or name.startswith("history.") or _LAYER_KEY.fullmatch(name):
            raise ValueError(f"save: extra {name!r} collides with the model's own {name!r} in the checkpoint; "
                             "give it another name")
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _SAVEZ_KEYWORDS:
            raise ValueError(f"save: extra {name!r} must be a Python identifier other than "
                             f"{', '.join(_SAVEZ_KEYWORDS)} (it becomes a member of the checkpoint's zip file)")
        arrays[name] = stored_value(f"extra {name!r}", value)
    return arrays


def stored_value(what, value):
    """``value`` as an array of numbers or text, or an error naming ``what``: a checkpoint holds no pickles."""
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"save: {what} must be a rectangular array of numbers or text; got a ragged "
                         f"sequence") from None
    if array.dtype.kind not in "biufcSU" or isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"save: {what} must be numbers or text (a checkpoint holds no pickled "
                        f"objects); got {value!r} of dtype {array.dtype}")
    return array


def history(model):
    """The model's history as checkpoint arrays ``history.<name>``: numbers only, each name an identifier."""
    if not isinstance(model.history, dict):
        raise TypeError(f"save: history must be a dict of numbers; got {type(model.history).__name__}")
    arrays = {}
    for name, values in model.history.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"save: history name {name!r} must be a Python identifier")
        array = stored_value(f"history[{name!r}]", values)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"save: history[{name!r}] must hold numbers; got dtype {array.dtype}")
        arrays[f"history.{name}"] = array
    return arrays


def layer_settings(model):
    """Each layer's RoPE settings as checkpoint arrays; refuse a layer with anything a checkpoint cannot hold."""
    arrays = {}
    for i, layer in enumerate(model.layers):
        unknown = sorted(set(vars(layer)) - STORED_LAYER_ATTRIBUTES)
        if unknown:
            raise ValueError(f"save: layer{i} has {', '.join(unknown)}, which a checkpoint cannot store; "
                             "the loaded model would compute something else")
        if getattr(layer, "num_kv_heads", layer.num_heads) != layer.num_heads:
            raise ValueError(f"save: layer{i} has num_kv_heads = {layer.num_kv_heads} != num_heads; a checkpoint "
                             "holds ordinary multi-head layers only")
        rope, base = getattr(layer, "rope", False), getattr(layer, "rope_base", 10000.0)
        if not isinstance(rope, (bool, np.bool_)):
            raise ValueError(f"save: layer{i}.rope = {rope!r}, which a checkpoint cannot store (True or False)")
        pairing = (getattr(layer, "rope_pairing", None) or "half") if rope else None  # as the forward reads it
        if (pairing or "none") not in _ROPE_STORED:
            raise ValueError(f"save: layer{i} has rope = {rope!r} with rope_pairing = {pairing!r}, which a checkpoint "
                             "cannot store (rope False, or True with rope_pairing 'half' or 'interleaved')")
        arrays[f"layer{i}.rope"], arrays[f"layer{i}.rope_base"] = np.array(pairing or "none"), np.array(float(base))
    return arrays


class _Terminated(BaseException):
    """SIGTERM during a save: unwinds the write so that its temporary file is removed."""


def write_atomic(path, arrays):
    """Write ``arrays`` to ``path`` as ``.npz``: a temporary file in the same folder, then ``os.replace``.

    An interrupted write (an exception, Ctrl-C, SIGTERM) leaves the previous file as it was
    and no temporary file. A symbolic link is kept: the file it points to is replaced. An
    existing file keeps its permissions. Returns the path written.
    """
    path = checkpoint_path(path)
    target = os.path.realpath(path)  # through a symbolic link: the link stays, its target is replaced
    folder = os.path.dirname(target)
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None  # a new file: the umask applies, as for open()
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise type(error)(error.errno, f"cannot write checkpoint {path}: {error.strerror} (folder {folder})") from None
    with _TerminateUnwinds():
        try:
            with os.fdopen(descriptor, "wb") as file:
                np.savez(file, **arrays)
                file.flush()
                if mode is not None:
                    os.fchmod(file.fileno(), mode)
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException as error:
            if os.path.exists(temporary):
                os.unlink(temporary)
            if isinstance(error, OSError) and not isinstance(error, _Terminated):
                raise type(error)(error.errno, f"cannot write checkpoint {path}: {error.strerror}") from None
            raise
    return path


class _TerminateUnwinds:
    """In the main thread, turn SIGTERM (if it would kill the process) into an exception while a save runs.

    The save's cleanup runs, then the signal is delivered again with its default action, so
    the process still ends as SIGTERM says.
    """

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise _Terminated

    def __exit__(self, kind, error, traceback):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        if kind is _Terminated:
            os.kill(os.getpid(), signal.SIGTERM)  # the default action, now that the temporary file is gone
        return False


def read_checkpoint(path):
    """Every array of the checkpoint at ``path``, loaded without pickle, or an error naming the file."""
    name = os.fspath(path)
    if isinstance(name, str) and not os.path.exists(name) and os.path.isfile(name + ".npz"):
        name = path = name + ".npz"  # what save(name) wrote: .npz appended, as np.savez does
    try:
        data = np.load(path, allow_pickle=False)  # an ndarray for a .npy file, an NpzFile for an archive
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise TypeError(f"{type(data).__name__}, not an .npz archive")
        with data:
            arrays = {}
            for key in data.files:
                if f"{key}.npy" not in data.zip.namelist():
                    raise _bad(name, f"member {key!r} is not an .npy array (a checkpoint holds arrays only)")
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
            if not _CANONICAL_LAYER.fullmatch(match.group(1)):
                raise _bad(name, f"unknown entry {key}: layers are named layer0, layer1, ... (no leading zero, "
                           "at most 999999)")
            if match.group(2) not in _LAYER_WEIGHTS + _LAYER_SETTINGS:
                known = ", ".join(_LAYER_WEIGHTS + _LAYER_SETTINGS)
                raise _bad(name, f"unknown layer entry {key} (a layer holds {known})")
            layers.setdefault(int(match.group(1)), set()).add(match.group(2))
    num_layers = max(layers) + 1  # at most 10**6: the names have at most six digits
    for i in range(num_layers):
        for weight in _LAYER_WEIGHTS:
            if weight not in layers.get(i, ()):
                raise _bad(name, f"missing layer{i}.{weight} (layers 0 to {num_layers - 1} are present)")
    for key in ("embed", "pos", "unembed"):
        if arrays[key].ndim != 2:
            raise _bad(name, f"{key} must be 2-D; got shape {arrays[key].shape}")
    vocab, d_model = arrays["embed"].shape
    sizes = {"num_layers": num_layers, "vocab": vocab, "max_len": arrays["pos"].shape[0], "d_model": d_model}
    for size in ("vocab", "max_len", "d_model"):
        if sizes[size] < 1:
            raise _bad(name, f"{size} must be >= 1; got {sizes[size]} (embed {arrays['embed'].shape}, pos "
                       f"{arrays['pos'].shape})")
    sizes["rope"] = [_rope_settings(name, arrays, i) for i in range(num_layers)]
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


def _rope_settings(name, arrays, i):
    """Layer ``i``'s ``(rope, rope_base)`` for the module: ``(False, 10000.0)`` in a checkpoint that has none.

    ``rope`` is stored as text, ``"none"``, ``"half"`` or ``"interleaved"``, and comes back as
    the module's ``rope`` argument (False, ``"half"`` or ``"interleaved"``); a stored bool
    (True = ``"half"``) is read too.
    """
    rope, base = arrays.get(f"layer{i}.rope", np.array("none")), arrays.get(f"layer{i}.rope_base", np.array(10000.0))
    if rope.shape == () and rope.dtype == np.bool_:
        rope = np.array("half" if rope else "none")
    if rope.shape != () or rope.dtype.kind != "U" or str(rope) not in _ROPE_STORED:
        raise _bad(name, f"layer{i}.rope must be one of {_ROPE_STORED}; got {rope!r}")
    if base.shape != () or base.dtype.kind != "f" or not (np.isfinite(base) and base > 0):
        raise _bad(name, f"layer{i}.rope_base must be one finite float > 0; got {base!r}")
    return (False if str(rope) == "none" else str(rope)), float(base)


def _num_heads(name, array, d_model):
    if array.shape != () or array.dtype.kind not in "iu":
        raise _bad(name, f"num_heads must be one integer; got {array!r}")
    num_heads = int(array)
    if num_heads <= 0 or d_model % num_heads:
        raise _bad(name, f"num_heads = {num_heads} must be positive and divide d_model = {d_model}")
    return num_heads
