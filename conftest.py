"""Notebooks are tests too: nbval re-runs each ``notebooks/*.ipynb`` and compares its outputs.

This file switches nbval on, with the options the notebooks need, whenever the nbval plugin
is installed (``pip install -e ".[test]"``); it only acts on the ``.ipynb`` files a run
collects, so ``pytest tests/core/test_softmax.py`` runs the same with or without it:

- ``--nbval``: every output is compared with the stored one (unless ``--nbval-lax`` is given);
- ``--nbval-current-env``: the kernel runs in pytest's own environment (unless a kernel is named);
- ``--nbval-sanitize-with notebooks/nbval_sanitize.cfg``: the kernel's temporary paths;
- ``--nbval-cell-timeout 120`` seconds a cell.

Options given on the command line win. Without nbval, a notebook that the run collects is
skipped with the command that installs it (under ``CI=true`` that is a failure), instead
of being silently left out.

After nbval's last cell of a chapter notebook, the same run is read once more, in its own
kernel (``tests/notebook_kernel.py``): every exercise's check must tell the answer from the
typical mistakes without giving it away, and the run must have written no file. No notebook
is executed twice for that.

A test that runs a notebook's code itself (it takes the ``notebook`` fixture: the claims read
from a notebook's run) is marked
``runs_notebook``, so that a job which runs the notebooks elsewhere can leave it out
(``-m "not runs_notebook"``). The files that take longest (a test marked ``retrains``, then
the notebooks and the tests that run one) are put first, so that pytest-xdist starts them first.

It also loads a Hypothesis profile without a deadline: no test here is timed (speed is
measured in ``benchmarks/``), and Hypothesis's 200 ms per example fails a correct test on a
busy machine.

Two fixtures serve the tests that read the shipped checkpoint, each built once per test file:
``model`` (the trained two-layer model) and ``batch`` (the notebooks' 512 sequences, seed 2024);
a file that means another model or batch defines its own fixture of that name.

The tests live in folders that mirror the package (``tests/core/`` for ``mhattn/core/``, and
so on); the modules they share (``tests/helpers.py``, the oracle, the servers) stay in
``tests/`` itself, which this file puts on the import path.
"""

import os
import sys
from pathlib import Path

import pytest

try:
    from hypothesis import settings
except ImportError:  # only the property tests need Hypothesis
    pass
else:
    settings.register_profile("mhattn", deadline=None)
    settings.load_profile("mhattn")

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))  # `from helpers import ...` from any test folder
from notebook_kernel import pytest_make_collect_report, pytest_runtest_setup  # noqa: E402, F401  (hooks)

SANITIZE = ROOT / "notebooks" / "nbval_sanitize.cfg"
CELL_TIMEOUT = 120  # seconds; nbval's own default is 2000
NBVAL_DEFAULT_TIMEOUT = 2000


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return
    option = config.option
    if not (option.nbval or option.nbval_lax):
        option.nbval = True
    if not option.nbval_kernel_name:
        option.nbval_current_env = True
    if option.nbval_sanitize_with is None and not getattr(option, "sanitize_with", None):
        option.nbval_sanitize_with = str(SANITIZE)
    if option.nbval_cell_timeout == NBVAL_DEFAULT_TIMEOUT:
        option.nbval_cell_timeout = CELL_TIMEOUT


class _NotebookWithoutNbval(pytest.File):
    """A notebook collected where nbval is not installed: one item that says so."""

    def collect(self):
        yield _NbvalMissing.from_parent(self, name="nbval")


class _NbvalMissing(pytest.Item):
    def runtest(self):
        reason = f'{self.path.name} needs nbval to run: pip install -e ".[test]"'
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::nbval"


RUNS_NOTEBOOK_FIXTURES = {"notebook"}  # the fixtures that execute a notebook's code


def pytest_collection_modifyitems(config, items):
    for item in items:
        if RUNS_NOTEBOOK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.runs_notebook)
    # The longest files first: pytest-xdist (--dist loadfile) hands out whole files in this
    # order, so a file that retrains a model, then the files that run notebooks, start at once
    # on their own workers instead of being the last ones left while the others sit idle.
    slowest = {}
    for item in items:
        rank = 0 if item.get_closest_marker("retrains") else 1 if _runs_a_notebook(item) else 2
        slowest[item.path] = min(rank, slowest.get(item.path, 2))
    items.sort(key=lambda item: slowest[item.path])  # stable: each file keeps its order


def _runs_a_notebook(item):
    return item.path.suffix == ".ipynb" or item.get_closest_marker("runs_notebook") is not None


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".ipynb" and not parent.config.pluginmanager.hasplugin("nbval"):
        return _NotebookWithoutNbval.from_parent(parent, path=file_path)
    return None


# The built book, shared by the browser tests of tests/book/ -----------------------------------

BOOK_TOOLS = ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx_copybutton", "mathjax")


def _book_build():
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_build_for_the_tests", ROOT / "book" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The folder of the site book/build.py builds (index.html at its top), built once per test run.

    ``book/build.py`` renders the chapter from the notebooks' stored outputs with Sphinx, which
    takes seconds of CPU. The site is the same for every test that reads it (the checks of
    every page, the chapters' live figures, the explorer's page), so it is built once per run
    into a temporary folder, and the tests only read it (a test that needs a broken site copies
    it first). Under pytest-xdist the workers share that one build: the first worker that needs
    it builds it while the others wait on a lock, then read it. Skips with the reason when the
    book tools are missing, except under ``CI=true``, where that is a failure.
    """
    import fcntl
    import importlib.util

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


# The shipped trained model and the notebooks' batch, shared by the tests that read them -------


@pytest.fixture(scope="module")
def model():
    """The shipped two-layer induction model (``mhattn.learn.shipped.load_trained()``), one per test file.

    Module scope: the tests of one file share it, and no file sees what another did to its copy.
    A test file that means another model defines its own ``model`` fixture, which wins there.
    """
    from mhattn.learn.shipped import load_trained

    return load_trained()


@pytest.fixture(scope="module")
def batch():
    """The notebooks' 512 sequences, ``induction_batch`` of seed 2024: the batch ``measure()`` draws.

    A test file that means another batch defines its own ``batch`` fixture, which wins there.
    """
    import numpy as np

    from mhattn.learn.task import induction_batch

    return induction_batch(np.random.default_rng(2024), 512)
