#!/usr/bin/env bash
# Refresh the chapter's notebooks after editing their .py sources.
#
#   bash notebooks/refresh.sh                      # every notebook
#   bash notebooks/refresh.sh notebooks/04_*.py    # only some
#
# For each notebooks/NN_name.py (and notebooks/explore.py), in a fresh Python kernel with
# notebooks/ as the working directory, this:
#   1. reads the cells from the .py (the reviewable source, percent format),
#   2. executes them top to bottom, which also rewrites the figures/ they save,
#   3. writes NN_name.ipynb: the .py's cells with the new outputs, keeping the cell ids of
#      the old .ipynb and naming widget models in the order they were made, so that
#      `git diff` shows only what really changed,
# and prints how many seconds each notebook took.
#
# It refuses to overwrite an .ipynb whose cells differ from its .py and that is newer than
# it (you edited the .ipynb without jupytext syncing the .py): run
# `jupytext --sync notebooks/NAME.ipynb` first, or pass --force to discard those edits.
#
# Works from any directory, in a fresh clone, once the package is installed
# (`pip install -e ".[test]"`). The interpreter, which also runs the kernel, is
# $PYTHON, default `python`.
set -euo pipefail
args=()
for arg in "$@"; do  # paths as given, relative to where you are; then work from the repo root
    if [[ $arg == --force ]]; then args+=("$arg"); else args+=("$(realpath "$arg")"); fi
done
cd "$(dirname "$0")/.."

exec "${PYTHON:-python}" - "${args[@]}" <<'PY'
import hashlib
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from jupytext.combine import combine_inputs_with_outputs
from nbclient import NotebookClient

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # keeps a debugger notice out of stderr

NOTEBOOKS = Path("notebooks")


def cells(nb):
    """What the pair must agree on: each cell's type and source."""
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def with_stable_widget_ids(nb, name):
    """Rename the widget models in the order the kernel made them (ipywidgets picks random ids).

    Then refreshing an unchanged notebook that shows widgets changes nothing either.
    """
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    if not state:
        return nb
    text = nbformat.writes(nb)
    for index, old in enumerate(list(state)):  # creation order
        text = text.replace(old, hashlib.sha256(f"{name}:{index}".encode()).hexdigest()[:32])
    return nbformat.reads(text, as_version=4)


def refresh(source, force):
    target = source.with_suffix(".ipynb")
    nb = jupytext.read(source)
    if target.exists():
        old = nbformat.read(target, as_version=4)
        if cells(old) != cells(nb) and target.stat().st_mtime > source.stat().st_mtime and not force:
            sys.exit(
                f"{target} has cells that {source} lacks and is newer: run `jupytext --sync {target}` "
                "to carry them into the .py, or pass --force to drop them"
            )
        nb = combine_inputs_with_outputs(nb, old)  # the .py's cells, the old ids
    nb.metadata.pop("widgets", None)  # the run below saves the state of the widgets it makes
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        record_timing=False,  # no timestamps in the .ipynb: refreshing twice changes nothing
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nb = with_stable_widget_ids(nb, source.stem)
    jupytext_metadata = nb.metadata.get("jupytext", {})
    jupytext_metadata.pop("text_representation", None)  # describes the .py, as jupytext itself does
    if not jupytext_metadata:
        nb.metadata.pop("jupytext", None)
    nbformat.write(nb, target)
    print(f"{seconds:6.1f} s  {source} -> {target}", flush=True)


args = sys.argv[1:]
force = "--force" in args
sources = [Path(os.path.relpath(arg)) for arg in args if arg != "--force"]
if not sources:
    sources = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")) + sorted(NOTEBOOKS.glob("explore.py"))
for source in sources:
    if source.suffix != ".py" or not source.is_file():
        sys.exit(f"expected a notebook source notebooks/NAME.py; got {source}")
    refresh(source, force)
PY
