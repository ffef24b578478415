"""The checkpoint file of :class:`mhattn.learn.model.InductionModel`, read member by member.

A checkpoint is an ``.npz`` file: ``np.savez``'s zip archive of ``.npy`` members, one array each.

- ``embed`` ``(vocab, d_model)``, ``pos`` ``(max_len, d_model)``, ``unembed`` ``(d_model, vocab)``;
  ``layer<i>.W_qkv`` ``(d_model, 3 * d_model)`` and ``layer<i>.W_o`` ``(d_model, d_model)`` for
  ``i = 0, 1, ...``: finite floats;
- ``num_heads``, one integer; ``layer<i>.rope`` (``"none"``, ``"half"`` or ``"interleaved"``) and
  ``layer<i>.rope_base`` (a float > 0): what each layer's forward reads besides its weights;
- ``history.<name>``: the training curve, numbers;
- anything else the writer stored (``seed``, ``steps``, ``machine``, ...): numbers or text.

The file is found as :mod:`.links` says (the ``.npz`` rule; only trusted links followed).
Nothing in a file is trusted. Before any data is decompressed, the zip entries' sizes and every
member's ``.npy`` header (read with ``allow_pickle=False``: no pickles, ever) are checked: each
declared shape must fill its member exactly, no entry may claim more than deflate can expand
(1032 to 1), and every array the model uses must have the shape that ``embed`` and ``pos``
give it, together at most :data:`MAX_PARAMETER_BYTES`. Then only the members the model uses are
read (the weights, ``num_heads``, the layers' settings and the history); the others are never
decompressed. Every error names the file and what is wrong with it.
"""

import math
import os
import re
import stat
import zipfile
import zlib

import numpy as np

from .links import checkpoint_path, resolve

MAX_PARAMETER_BYTES = 2**30  #: the most the weights may take (as stored); the chapter's models take 140 kB
MAX_HISTORY_VALUES = 2**24  #: the most numbers the history may hold, all its entries together
MAX_TEXT = 64  #: the longest text a model's member (a layer's ``rope``) may hold
DEFLATE_RATIO = 1032  #: deflate's largest expansion: one 258-byte match per 2 bits
LAYER_KEY = re.compile(r"layer(\d+)\.(.*)")
CANONICAL_LAYER = re.compile(r"0|[1-9]\d{0,5}")  # layer0 .. layer999999, no leading zero
LAYER_WEIGHTS = ("W_qkv", "W_o")
LAYER_SETTINGS = ("rope", "rope_base")  # everything else a layer's forward reads, stored beside its weights
ROPE_STORED = ("none", "half", "interleaved")  #: how a checkpoint writes a layer's RoPE (text, no pickle)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KINDS = "biufU"  # the dtypes a member may have: numbers and text


def load_args(cls, path):
    """``InductionModel.load``'s door: ``path`` names a checkpoint file (the ``.npz`` rule) reached by trusted links."""
    name = checkpoint_path(path)
    if resolve(name, "read")[1] is None:
        beside = f" (a file {path!r} exists, but a checkpoint's name ends in .npz: rename it)" if (
            os.path.isfile(os.fspath(path))) else ""
        raise FileNotFoundError(f"checkpoint {name}: no such file{beside}")
    return {"cls": cls, "path": name}, None


def bad(name, what):
    """The error for a checkpoint that is not what it should be: ``ValueError`` naming the file."""
    return ValueError(f"checkpoint {name}: {what}")


def _size(nbytes):
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} bytes"


class Archive:
    """An open checkpoint: its ``.npy`` members by name, each entry's zip sizes already checked."""

    def __init__(self, path):
        self.name = checkpoint_path(path)
        target = resolve(self.name, "read")[0]
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)  # a FIFO must not block
        try:
            descriptor = os.open(target, flags)  # resolved: a link put there since is not followed
        except OSError as error:
            raise type(error)(error.errno, f"checkpoint {self.name}: {error.strerror}") from None
        self.file = os.fdopen(descriptor, "rb")
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise bad(self.name, "not a regular file")
            self.zip = zipfile.ZipFile(self.file)
            self.members = self._members(info.st_size)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
            self.file.close()
            if isinstance(error, ValueError) and str(error).startswith("checkpoint "):
                raise
            raise self.unreadable() from None

    def unreadable(self):
        return bad(self.name, "not a readable .npz archive (truncated, corrupted or another kind of file); "
                   "write checkpoints with InductionModel.save or python -m mhattn.train")

    def corrupted(self, key):
        return bad(self.name, f"member {key}.npy is truncated or corrupted (its data does not match its zip entry's "
                   "size and checksum)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.zip.close()
        self.file.close()

    def _members(self, file_size):
        members = {}
        for info in self.zip.infolist():
            if not info.filename.endswith(".npy"):
                raise bad(self.name, f"member {info.filename!r} is not an .npy array (a checkpoint holds arrays only)")
            key = info.filename[: -len(".npy")]
            if key in members:
                raise bad(self.name, f"member {info.filename!r} appears twice")
            if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise bad(self.name, f"member {info.filename!r} is encrypted or compressed other than by deflate")
            if info.header_offset + info.compress_size > file_size:
                raise bad(self.name, f"member {info.filename!r} is truncated: it ends beyond the file's "
                          f"{file_size} bytes")
            most = info.compress_size if info.compress_type == zipfile.ZIP_STORED else (
                DEFLATE_RATIO * info.compress_size + 1024)
            if info.file_size > most:
                raise bad(self.name, f"member {info.filename!r} claims {_size(info.file_size)} from "
                          f"{_size(info.compress_size)} compressed, more than deflate can expand")
            members[key] = info
        return members

    def header(self, key):
        """``(shape, fortran_order, dtype, data_bytes, header_bytes)`` of member ``key``, checked against its entry."""
        info = self.members[key]
        try:
            with self.zip.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version not in ((1, 0), (2, 0)):
                    raise ValueError(f"npy format version {version}")
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else (
                    np.lib.format.read_array_header_2_0)
                shape, fortran_order, dtype = read(member, max_header_size=10000)
                offset = member.tell()
        except (EOFError, zipfile.BadZipFile, zlib.error, OSError):
            raise self.corrupted(key) from None
        except (ValueError, SyntaxError, TypeError):
            raise bad(self.name, f"member {key}.npy is not an .npy array (its header cannot be read)") from None
        if dtype.hasobject:
            raise bad(self.name, f"{key} holds Python objects, not numbers (no pickles in a checkpoint)")
        if dtype.names is not None or dtype.subdtype is not None or dtype.kind not in _KINDS:
            raise bad(self.name, f"{key} has dtype {dtype}; a checkpoint holds numbers and text only")
        if any(not isinstance(n, int) or n < 0 for n in shape):
            raise bad(self.name, f"{key} declares shape {shape}")
        data = math.prod(shape) * dtype.itemsize
        declared = f"{key}.npy declares shape {shape} of {dtype} ({_size(data)} of data)"
        if offset + data > info.file_size:
            raise bad(self.name, f"{declared}, but the member holds {_size(max(info.file_size - offset, 0))}: "
                      "it is truncated (or its header is false)")
        if offset + data < info.file_size:
            raise bad(self.name, f"{declared}, but the member holds {info.file_size - offset - data} bytes "
                      "more: its header is false")
        return shape, fortran_order, dtype, data, offset

    def read(self, key, header):
        """Member ``key``'s array, ``header`` as :meth:`header` returned it; at most its declared bytes are read."""
        shape, fortran_order, dtype, data, offset = header
        array = np.empty(math.prod(shape), dtype=dtype)
        view = memoryview(array).cast("B")
        try:
            with self.zip.open(self.members[key]) as member:
                member.read(offset)  # the header, read and checked by header()
                done = 0
                while done < data:  # in chunks: no second copy of a large member
                    got = member.readinto(view[done:done + 2**20])
                    if not got:
                        break
                    done += got
                if done < data or member.read(1):
                    raise EOFError
        except (EOFError, zipfile.BadZipFile, zlib.error, OSError):
            raise self.corrupted(key) from None
        return array.reshape(shape, order="F" if fortran_order else "C")


def expected_shapes(num_layers, vocab, max_len, d_model):
    """Every parameter's shape by its checkpoint name."""
    shapes = {"embed": (vocab, d_model), "pos": (max_len, d_model), "unembed": (d_model, vocab)}
    for i in range(num_layers):
        shapes[f"layer{i}.W_qkv"], shapes[f"layer{i}.W_o"] = (d_model, 3 * d_model), (d_model, d_model)
    return shapes


def named_members(name, members):
    """Split the archive's keys: ``(model keys, num_layers)``; refuse unknown layer entries and gaps."""
    required = ("embed", "pos", "unembed", "num_heads", "layer0.W_qkv", "layer0.W_o")
    missing = [key for key in required if key not in members]
    if missing:
        raise bad(name, f"missing {', '.join(missing)}; found {sorted(members)}")
    layers, used = {}, ["embed", "pos", "unembed", "num_heads"]
    for key in members:
        match = LAYER_KEY.fullmatch(key)
        if match:
            if not CANONICAL_LAYER.fullmatch(match.group(1)):
                raise bad(name, f"unknown entry {key}: layers are named layer0, layer1, ... (no leading zero, "
                          "at most 999999)")
            if match.group(2) not in LAYER_WEIGHTS + LAYER_SETTINGS:
                known = ", ".join(LAYER_WEIGHTS + LAYER_SETTINGS)
                raise bad(name, f"unknown layer entry {key} (a layer holds {known})")
            layers.setdefault(int(match.group(1)), set()).add(match.group(2))
            used.append(key)
        elif key.startswith("history."):
            if not NAME.fullmatch(key[len("history."):]):
                raise bad(name, f"history entry {key!r} must be history.<a Python identifier>")
            used.append(key)
    num_layers = max(layers) + 1  # at most 10**6: the names have at most six digits
    for i in range(num_layers):
        for weight in LAYER_WEIGHTS:
            if weight not in layers.get(i, ()):
                raise bad(name, f"missing layer{i}.{weight} (layers 0 to {num_layers - 1} are present)")
    return used, num_layers


def read_extras(path, keys):
    """``{key: value}`` of the scalar members ``keys`` (numbers or text), read as :class:`Archive` reads."""
    with Archive(path) as archive:
        values = {}
        for key in keys:
            if key not in archive.members:
                raise bad(archive.name, f"missing {key}")
            header = archive.header(key)
            if header[0] != () or header[2].itemsize > 4 * 1024:
                raise bad(archive.name, f"{key} must be one number or a short text; got shape {header[0]} of "
                          f"{header[2]}")
            values[key] = archive.read(key, header).item()
        return values
