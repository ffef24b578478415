"""Checks that run after a notebook's last cell, on nbval's own run of it (no second execution).

nbval executes each ``notebooks/NN_*.ipynb`` once, in one kernel, and compares its outputs.
To that run, ``conftest.py`` appends items that read what it left behind:

- every exercise's check, called in the notebook's kernel with the pre-filled answer, a right
  answer and the typical mistakes (``tests/notebooks/exercise_answers.py``): "not yet",
  "correct.", a rejection each time, and no rejection that gives the answer away;
- a plain run writes no file: nothing under ``notebooks/`` or ``figures/`` appeared or changed
  between the notebook's first cell and its last (figures are saved only by
  ``notebooks/refresh.sh``).

Each item fails with the kernel's own traceback, and reports an error if nbval's run of the
notebook did not get that far.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / "tests" / "notebooks"  # exercise_answers.py, imported inside the kernel
WATCHED = ("notebooks", "figures")  # where a plain run must write nothing
IGNORED = {"__pycache__", ".ipynb_checkpoints", ".jupyter_cache", ".virtual_documents"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

try:
    from nbval.plugin import IPyNbFile
except ImportError:  # without nbval no notebook runs, and there is nothing to read
    IPyNbFile = None


def files_under(folders=WATCHED):
    """``{path: (size, mtime_ns)}`` of every file under ``folders`` (caches left out)."""
    found = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and not IGNORED.intersection(path.relative_to(ROOT).parts):
                stat = path.stat()
                found[path.relative_to(ROOT).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return found


def exercises_of(stem):
    """The ``(notebook, checker)`` pairs of ``exercise_answers.EXERCISES`` for one notebook."""
    import sys

    sys.path.insert(0, str(ANSWERS))
    try:
        import exercise_answers
    finally:
        sys.path.remove(str(ANSWERS))
    return [checker for name, checker, _ in exercise_answers.EXERCISES if name == stem]


def run_in_kernel(kernel, code, timeout):
    """Execute ``code`` in nbval's kernel; raise :class:`KernelError` with its traceback if it fails."""
    msg_id = kernel.execute_cell_input(code, allow_stdin=False)
    while True:
        reply = kernel.get_message(stream="shell", timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    kernel.await_idle(msg_id, timeout)  # its outputs read, so none is left for a later cell
    content = reply["content"]
    if content["status"] != "ok":
        raise KernelError(ANSI.sub("", "\n".join(content.get("traceback", [])))
                          or f"{content.get('ename')}: {content.get('evalue')}")


class KernelError(Exception):
    """What the notebook's kernel raised, with its traceback."""


class AfterLastCell(pytest.Item):
    """An item run after nbval's last cell of its notebook (its parent), on what that run left."""

    def repr_failure(self, excinfo):
        if excinfo.errisinstance((KernelError, AssertionError)):
            return f"{self.name}:\n{excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.name}"

    def kernel(self):
        kernel = self.parent.kernel
        if kernel is None or not kernel.is_alive() or self.parent.timed_out:
            pytest.fail(f"nbval's kernel for {self.path.name} is not running: see the notebook's cells above")
        return kernel


class ExerciseCheck(AfterLastCell):
    def __init__(self, *, checker, **kwargs):
        super().__init__(**kwargs)
        self.checker = checker

    def runtest(self):
        code = (
            f"import sys as _sys\n_sys.path.insert(0, {str(ANSWERS)!r})\n"
            f"import exercise_answers as _answers\n_sys.path.remove({str(ANSWERS)!r})\n"
            f"_answers.check_exercise({self.path.stem!r}, {self.checker!r}, globals())"
        )
        run_in_kernel(self.kernel(), code, self.config.option.nbval_cell_timeout)


class WritesNoFile(AfterLastCell):
    def runtest(self):
        self.kernel()  # the run reached its last cell
        before, after = self.parent.files_before, files_under()
        written = sorted(path for path in after if before.get(path) != after[path])
        assert not written, f"a plain run of {self.path.name} wrote {written} (figures are saved only by refresh.sh)"


def pytest_runtest_setup(item):
    """Before a notebook's first cell runs: what ``notebooks/`` and ``figures/`` hold."""
    if IPyNbFile is not None and isinstance(item.parent, IPyNbFile) and not hasattr(item.parent, "files_before"):
        item.parent.files_before = files_under()


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """After nbval's cells of a chapter notebook: its exercise checks, then the no-file check."""
    outcome = yield
    if IPyNbFile is None or not isinstance(collector, IPyNbFile) or not collector.path.stem[:2].isdigit():
        return
    report = outcome.get_result()
    if report.outcome != "passed":
        return
    report.result += [
        ExerciseCheck.from_parent(collector, name=f"{checker} accepts the answer and rejects mistakes", checker=checker)
        for checker in exercises_of(collector.path.stem)
    ]
    report.result.append(WritesNoFile.from_parent(collector, name="a plain run writes no file"))
