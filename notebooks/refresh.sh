#!/usr/bin/env bash
# Refresh the chapter's notebooks after editing their .py sources.
#
#   bash notebooks/refresh.sh                      # every notebook
#   bash notebooks/refresh.sh notebooks/04_*.py    # only some
#
# For each notebooks/NN_name.py (and notebooks/explore.py), in a fresh Python kernel with
# notebooks/ as the working directory, this:
#   1. reads the cells from the .py (the reviewable source, percent format),
#   2. executes them top to bottom with MHATTN_SAVE_FIGURES=1, so that
#      mhattn.pictures.figures.save_figure rewrites the figures/ they save (a plain run, nbval or
#      the tests, writes nothing),
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
#
# Text sizes, for the book's test: before the notebook's first cell, the kernel runs a setup
# cell (left out of the saved .ipynb) that wraps IPython's PNG formatter for matplotlib
# figures. Every PNG output of a figure then carries, in the .ipynb,
#     output.metadata["mhattn"] = {"min_font_px": <float>, "dpi": <float>}
# where min_font_px is the smallest font size, in pixels of the PNG as stored, of any text
# the figure really drew (visible, not empty): fontsize in pt * dpi / 72. The page shows
# the image at some width; the text's size on the page is then
#     min_font_px * displayed width / the PNG's own width.
set -euo pipefail
export MHATTN_SAVE_FIGURES=1  # the kernels below inherit it: save_figure writes figures/
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

# Run in the kernel before the notebook's own cells, and then taken out of the notebook.
# IPython looks up pylabtools.print_figure whenever it (re)selects the figure formats (the
# notebooks' `%config InlineBackend.figure_formats = ...` does), so wrapping it there
# covers every figure the notebook shows; the formatter is also set again right away.
MEASURE_TEXT = """
def _mhattn_measure_text():
    import functools

    import matplotlib.text
    from IPython import get_ipython
    from IPython.core import pylabtools
    from matplotlib.figure import Figure

    original = pylabtools.print_figure
    if getattr(original, "measures_text", False):
        return
    text_draw = matplotlib.text.Text.draw

    def print_figure(fig, *args, **kwargs):
        if kwargs.get("fmt", args[0] if args else "png") != "png":
            return original(fig, *args, **kwargs)  # retina_figure, svg: left as they are
        sizes = []

        def draw(self, renderer):
            if self.get_visible() and self.get_text().strip():
                sizes.append(self.get_fontsize())
            return text_draw(self, renderer)

        matplotlib.text.Text.draw = draw
        try:
            data = original(fig, *args, **kwargs)
        finally:
            matplotlib.text.Text.draw = text_draw
        if data is None or not sizes:
            return data
        dpi = float(fig.dpi)
        return data, {"mhattn": {"min_font_px": round(min(sizes) * dpi / 72, 2), "dpi": dpi}}

    print_figure.measures_text = True
    pylabtools.print_figure = print_figure
    png = get_ipython().display_formatter.formatters["image/png"]
    png.for_type(Figure, functools.partial(print_figure, fmt="png", base64=True))


_mhattn_measure_text()
del _mhattn_measure_text
"""


def lift_text_sizes(nb):
    """Move the setup cell's {"mhattn": ...} from output.metadata["image/png"] to output.metadata."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("metadata", {}).get("image/png", {})
            if "mhattn" in png:
                output.metadata["mhattn"] = png.pop("mhattn")
                if not png:
                    output.metadata.pop("image/png")
    return nb


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
    nb.cells.insert(0, nbformat.v4.new_code_cell(MEASURE_TEXT))  # taken out again below
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
    setup = nb.cells.pop(0)
    if setup.outputs:
        sys.exit(f"{source}: the text-measuring setup cell failed: {setup.outputs}")
    for cell in nb.cells:  # count as if the setup cell had not run
        if cell.cell_type == "code" and cell.execution_count:
            cell.execution_count -= 1
            for output in cell.outputs:
                if "execution_count" in output:
                    output.execution_count -= 1
    nb = lift_text_sizes(nb)
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
