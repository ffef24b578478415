"""Build the chapter as a static website from the notebooks' stored outputs.

Usage, from the repository root (needs the ``book`` extra: ``pip install -e ".[book]"``)::

    python book/build.py                  # into build/book/ (index.html at its top)
    python book/build.py --out SOMEWHERE  # anywhere else

Nothing is executed: nbval already checks that the stored outputs are what the code prints.
The notebooks are copied into a staging folder (``<out>-src``) and adjusted for a page
without a kernel, then Sphinx + MyST-NB render them (MyST-NB also writes the outputs'
images into ``jupyter_execute/`` beside ``<out>``; with the default, both are in build/):

- every ``notebooks/[0-9][0-9]_*.ipynb`` in order, then ``notebooks/explore.ipynb``;
- a code cell whose input JupyterLab collapses (``metadata.jupyter.source_hidden``) is
  collapsed on the page too, and opens on click (MyST-NB's ``hide-input`` tag; with
  ``outputs_hidden`` as well, the whole cell);
- a live widget (``application/vnd.jupyter.widget-view+json``) cannot run without a kernel:
  its output is dropped, the stored first frame (a PNG output beside it) is what the page
  shows, and a note under it links to the explorer running live;
- ``# NBVAL_...`` marker lines (for the notebook tests) are dropped from the code shown.
"""

import argparse
import copy
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "build" / "book"
PAGES = ["index.md", "references.md"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LIVE_URL = "https://mybinder.org/v2/gh/mhattn/mhattn/HEAD?urlpath=voila/render/notebooks/explore.ipynb"
NBVAL_COMMENT = re.compile(r"^[ \t]*# NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)


def live_note(has_frame):
    """The Markdown that stands in for a live widget on a static page."""
    frame = "The picture above is its first frame, as stored in the notebook. " if has_frame else ""
    return (f"*{frame}The controls need a running Python kernel: [Run it live on Binder]({LIVE_URL}) "
            "(the explorer as an app; the first start takes a few minutes).*")


def chapter_notebooks(folder=NOTEBOOKS):
    """The chapter's notebooks in reading order: ``NN_topic.ipynb`` sorted, then the explorer."""
    numbered = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    explorer = folder / "explore.ipynb"
    return numbered + ([explorer] if explorer.is_file() else [])


def hide_tags(metadata):
    """MyST-NB tags that collapse what JupyterLab collapses (``metadata.jupyter``)."""
    jupyter = metadata.get("jupyter", {})
    source, outputs = bool(jupyter.get("source_hidden")), bool(jupyter.get("outputs_hidden"))
    if source and outputs:
        return ["hide-cell"]
    if source:
        return ["hide-input"]
    if outputs:
        return ["hide-output"]
    return []


def for_the_page(notebook):
    """A copy of one notebook (a dict in nbformat 4) ready for a page without a kernel."""
    notebook = copy.deepcopy(notebook)
    notebook.get("metadata", {}).pop("widgets", None)  # widget state: nothing on the page can use it
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        metadata = cell.setdefault("metadata", {})
        tags = hide_tags(metadata)
        if tags:
            metadata["tags"] = sorted(set(metadata.get("tags", [])) | set(tags))
            source = "".join(cell["source"]).lower()
            if "solution" in source:
                metadata.setdefault("mystnb", {}).update(code_prompt_show="Show the solution",
                                                         code_prompt_hide="Hide the solution")
        cell["source"] = NBVAL_COMMENT.sub("", "".join(cell["source"]))  # test markers mean nothing to a reader
        outputs = cell.get("outputs", [])
        kept = [output for output in outputs if WIDGET_VIEW not in output.get("data", {})]
        if len(kept) < len(outputs):
            has_frame = any(key.startswith("image/") for output in kept for key in output.get("data", {}))
            kept.append({"output_type": "display_data", "metadata": {},
                         "data": {"text/markdown": live_note(has_frame)}})
        cell["outputs"] = kept
    return notebook


def stage(staging, notebooks=NOTEBOOKS):
    """Lay out the Sphinx source folder: the book's pages and the adjusted notebooks."""
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "notebooks").mkdir(parents=True)
    for name in PAGES:
        shutil.copy2(BOOK / name, staging / name)
    for path in chapter_notebooks(notebooks):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        (staging / "notebooks" / path.name).write_text(json.dumps(for_the_page(notebook), indent=1),
                                                       encoding="utf-8")


def build(out=DEFAULT_OUT, quiet=True, notebooks=NOTEBOOKS):
    """Stage and build the site into ``out`` from the notebooks in ``notebooks``; return the seconds it took."""
    out = Path(out).resolve()
    staging = out.with_name(out.name + "-src")
    start = time.perf_counter()
    stage(staging, notebooks)
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(BOOK), "-W", "--keep-going",
               "-d", str(staging / ".doctrees"), str(staging), str(out)]
    if quiet:
        command.append("-q")
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the site goes (default: build/book)")
    parser.add_argument("--verbose", action="store_true", help="show Sphinx's progress")
    args = parser.parse_args(argv)
    try:
        seconds = build(args.out, quiet=not args.verbose)
    except subprocess.CalledProcessError as error:
        sys.exit(f"book: Sphinx failed (exit code {error.returncode}); the messages above say why")
    print(f"book: built {args.out / 'index.html'} in {seconds:.1f} s")


if __name__ == "__main__":
    main()
