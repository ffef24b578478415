"""Writing a checkpoint: what :meth:`mhattn.learn.model.InductionModel.save` may store, and where it may write.

Where a save may write (POSIX):

- the file is ``path``, ``.npz`` appended if missing (:func:`.links.checkpoint_path`);
- a symbolic link, at ``path`` or among its folders, is followed only if it belongs to the
  current user or to root (:func:`.links.resolve`). A link that another user planted (in
  ``/tmp``, say) is refused, whatever it points to: following it would let them choose which
  file is replaced;
- an existing file is replaced only if its mode lets the current user write to it: its owner's,
  group's or others' write bit, whichever applies; for root, any write bit. A read-only file
  (``chmod a-w``) is refused, even for root;
- the new file is written beside the one it replaces and renamed over it (atomic), with the old
  file's permissions; a link that is followed stays a link.

A refused save raises ``PermissionError`` naming the file and the reason, and writes nothing.
"""

import errno
import os
import signal
import stat
import threading
import uuid

import numpy as np

from .checkpoint import LAYER_KEY, MAX_HISTORY_VALUES, MAX_PARAMETER_BYTES, NAME, ROPE_STORED
from .links import checkpoint_path, refused, resolve
from .model import parameters

#: a layer's attributes that a checkpoint holds (weights, settings) or derives (sizes from the weights' shapes)
STORED_LAYER_ATTRIBUTES = frozenset(("W_qkv", "W_o", "rope", "rope_base", "rope_pairing", "d_model", "num_heads",
                                     "num_kv_heads", "d_k"))

_SAVEZ_KEYWORDS = ("file", "allow_pickle", "args", "kwds")  # np.savez's own parameters


def _writable(info):
    """Whether the mode bits let the current user write to a file with ``os.stat`` result ``info``."""
    if not hasattr(os, "geteuid"):
        return bool(info.st_mode & stat.S_IWUSR)
    euid = os.geteuid()
    if euid == 0:
        bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH  # root may write where anyone may, nowhere else
    elif info.st_uid == euid:
        bits = stat.S_IWUSR
    elif info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        bits = stat.S_IWGRP
    else:
        bits = stat.S_IWOTH
    return bool(info.st_mode & bits)


def save_target(path):
    """``(name, target, mode)``: the checkpoint's name, the real file a save replaces, its mode (None: new).

    The links of the path are followed as :func:`.links.resolve` allows; a read-only file is
    refused. See the module's docstring.
    """
    name = checkpoint_path(path)
    target, info = resolve(name, "write")
    if info is None:
        return name, target, None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"cannot write checkpoint {name}: {target} is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise refused(name, "write", f"{target} is not a regular file; nothing was written")
    if not _writable(info):
        raise refused(name, "write", f"{target} is read-only (mode {stat.S_IMODE(info.st_mode):o}); make it "
                      "writable (chmod u+w) to replace it, or save under another name; nothing was written")
    return name, target, info.st_mode & 0o777


def check_extra(extra, reserved):
    """``extra`` as arrays; refuse names that would overwrite the model's own entries, and values that need pickle.

    A name must be a Python identifier (no ``/`` or ``..``: it becomes a member of the zip
    file), and none of ``np.savez``'s own keywords (``file``, ``allow_pickle``).
    """
    arrays = {}
    for name, value in extra.items():
        if name in reserved or name.startswith("history.") or LAYER_KEY.fullmatch(name):
            raise ValueError(f"save: extra {name!r} collides with the model's own {name!r} in the checkpoint; "
                             "give it another name")
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in _SAVEZ_KEYWORDS:
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
    if array.dtype.kind not in "biufU" or isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"save: {what} must be numbers or text (a checkpoint holds no pickled "
                        f"objects); got {value!r} of dtype {array.dtype}")
    return array


def history(model):
    """The model's history as checkpoint arrays ``history.<name>``: numbers only, each name an identifier."""
    if not isinstance(model.history, dict):
        raise TypeError(f"save: history must be a dict of numbers; got {type(model.history).__name__}")
    arrays = {}
    for name, values in model.history.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"save: history name {name!r} must be a Python identifier")
        array = stored_value(f"history[{name!r}]", values)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"save: history[{name!r}] must hold numbers; got dtype {array.dtype}")
        arrays[f"history.{name}"] = array
    total = sum(array.size for array in arrays.values())
    if total > MAX_HISTORY_VALUES:
        raise ValueError(f"save: the history holds {total} numbers; a checkpoint holds at most {MAX_HISTORY_VALUES}")
    return arrays


def save_args(self, path, extra):
    """``InductionModel.save``'s door: a model a checkpoint can hold, extras it can store, a path it may write.

    Returns the arguments as the save takes them: ``path`` with ``.npz`` appended, each extra
    as its array.
    """
    parameters(self)
    nbytes = sum(array.nbytes for array in self.parameters().values())
    if nbytes > MAX_PARAMETER_BYTES:
        raise ValueError(f"save: the weights take {nbytes / 2**30:.3g} GiB; a checkpoint holds at most "
                         f"{MAX_PARAMETER_BYTES / 2**30:.3g} GiB of them")
    reserved = set(self.parameters()) | {"num_heads"} | set(layer_settings(self)) | set(history(self))
    extras = check_extra(extra, reserved)
    name = save_target(path)[0]
    return {"self": self, "path": name, **extras}, None


def layer_settings(model):
    """Each layer's RoPE settings as checkpoint arrays; refuse a layer that a checkpoint cannot hold.

    A loaded layer is rebuilt as one of ``model.layer_classes``, from its weights and these
    settings; a layer of any other class (a subclass with its own forward, say), or with any
    other attribute, would come back computing something else.
    """
    arrays = {}
    for i, layer in enumerate(model.layers):
        if type(layer) not in model.layer_classes:
            known = " or ".join(cls.__name__ for cls in model.layer_classes)
            raise ValueError(f"save: layer{i} is a {type(layer).__qualname__}, which a checkpoint cannot hold: it "
                             f"rebuilds every layer as exactly {known}, so the loaded model would compute "
                             "something else")
        unknown = sorted(set(vars(layer)) - STORED_LAYER_ATTRIBUTES)
        if unknown:
            raise ValueError(f"save: layer{i} has {', '.join(unknown)}, which a checkpoint cannot store; "
                             "the loaded model would compute something else")
        if getattr(layer, "num_kv_heads", layer.num_heads) != layer.num_heads:
            raise ValueError(f"save: layer{i} has num_kv_heads = {layer.num_kv_heads} != num_heads; a checkpoint "
                             "holds ordinary multi-head layers only")
        if layer.num_heads != model.num_heads:
            raise ValueError(f"save: layer{i} has num_heads = {layer.num_heads}, the model {model.num_heads}; a "
                             "checkpoint holds one head count for every layer")
        rope, base = getattr(layer, "rope", False), getattr(layer, "rope_base", 10000.0)
        if not isinstance(rope, (bool, np.bool_)):
            raise ValueError(f"save: layer{i}.rope = {rope!r}, which a checkpoint cannot store (True or False)")
        pairing = (getattr(layer, "rope_pairing", None) or "half") if rope else "none"  # as the forward reads it
        if pairing not in ROPE_STORED or not (isinstance(base, (int, float)) and np.isfinite(base) and base > 0):
            raise ValueError(f"save: layer{i} has rope = {rope!r} with rope_pairing = {pairing!r} and rope_base = "
                             f"{base!r}, which a checkpoint cannot store (rope False, or True with rope_pairing "
                             "'half' or 'interleaved'; rope_base a finite float > 0)")
        arrays[f"layer{i}.rope"], arrays[f"layer{i}.rope_base"] = np.array(pairing), np.array(float(base))
    return arrays


def stored_arrays(model, extra):
    """Everything a checkpoint of ``model`` holds, by member name (``save_args`` has checked it all)."""
    arrays = dict(model.parameters()) | {"num_heads": np.array(model.num_heads)} | layer_settings(model)
    return arrays | history(model) | {name: np.asarray(value) for name, value in extra.items()}


class _Terminated(BaseException):
    """SIGTERM during a save: unwinds the write so that its temporary file is removed."""


def write_atomic(path, arrays):
    """Write ``arrays`` to ``path`` as ``.npz``: a temporary file beside the target, then ``os.replace``.

    Where it writes, and what it refuses, is :func:`save_target`'s rule (the module's
    docstring). An interrupted write (an exception, Ctrl-C, SIGTERM) leaves the previous file
    as it was and no temporary file. Returns the path written (``path``, ``.npz`` appended).
    """
    path, target, mode = save_target(path)
    folder = os.path.dirname(target)
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # never through a link
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
            os.replace(temporary, target)  # a rename: a link planted at target since is replaced, not followed
        except BaseException as error:
            if os.path.lexists(temporary):
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
