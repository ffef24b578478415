"""The built book, shared by the browser tests of this folder: built once per test run.

``book/build.py`` renders the chapter from the notebooks' stored outputs with Sphinx, which
takes seconds of CPU. The site it writes is the same for every test that reads it (the
checks of every page, the chapters' live figures, the explorer's page), so ``built_book``
builds it once per run into a temporary folder, and the tests only read it (a test that
needs a broken site copies it first). Under pytest-xdist the workers share that one build:
the first worker that needs it builds it while the others wait on a lock, then read it.

Skips with the reason when the book tools are missing, except under ``CI=true``, where that
is a failure: CI installs them.
"""

import fcntl
import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK_TOOLS = ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx_copybutton", "mathjax")


def _book_build():
    spec = importlib.util.spec_from_file_location("book_build_for_the_tests", ROOT / "book" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The folder of the site book/build.py builds (index.html at its top), built once per test run."""
    missing = [module for module in BOOK_TOOLS if importlib.util.find_spec(module) is None]
    if missing:
        reason = f"the book tools are missing ({', '.join(missing)}): pip install -e '.[book]'"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the book cannot be built: {reason}")
        pytest.skip(reason)
    # Every xdist worker's temporary folder sits in the run's own one, which holds the shared build.
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    out, done = shared / "built-book" / "book", shared / "built-book" / "built"
    out.parent.mkdir(parents=True, exist_ok=True)
    with (shared / "built-book.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the build fails
        if not done.is_file():
            _book_build().build(out)
            done.write_text("built\n", encoding="utf-8")
    return out
