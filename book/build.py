"""Build the chapter as a static website from the notebooks' stored outputs.

Usage, from the repository root (needs the ``book`` extra: ``pip install -e ".[book]"``)::

    python book/build.py                  # into build/book/ (index.html at its top)
    python book/build.py --out SOMEWHERE  # anywhere else

Nothing is executed: nbval already checks that the stored outputs are what the code prints.
The notebooks are copied into a staging folder (``<out>-src``) and adjusted for a page
without a kernel, then Sphinx + MyST-NB render them (MyST-NB also writes the outputs'
images into ``jupyter_execute/`` beside ``<out>``; with the default, both are in build/):

- every ``notebooks/[0-9][0-9]_*.ipynb`` in order, then ``notebooks/explore.ipynb``, then the
  appendix (``APPENDIX``), which the landing page and the sidebar show under its own heading;
- a code cell whose input JupyterLab collapses (``metadata.jupyter.source_hidden``) is
  collapsed on the page too, and opens on click (MyST-NB's ``hide-input`` tag). With
  ``outputs_hidden`` as well, or when it is an exercise's solution, the whole cell, its
  output included, is one fold (``hide-cell``): a printed line must not give the answer away;
- every figure (an image output) gets a numbered caption under it, ``Figure N.k`` (N the
  notebook's number, k its k-th figure), followed by the caption the notebook writes beside
  it: a Markdown cell tagged ``figure-caption`` right after the cell that draws it holds, for
  each of its figures in order, ``**Figure.** caption`` and ``<!-- alt: alt text -->`` (the
  comment shows nowhere in JupyterLab or on GitHub). On the page the caption cell goes (its
  text is the caption) and the alt text is the image's. A cell that draws several figures is
  cut after each one on the page, so that each image carries its own alt text;
- a link reference definition (``[label]: url``) repeated in a later Markdown cell is
  dropped (each cell is its own document in JupyterLab; the page is one);
- a link whose text is a notebook's file name (``[02_x.ipynb](02_x.ipynb)``) shows that
  notebook's title instead, and a link to a chapter notebook on GitHub leads to its page;
- a live widget (``application/vnd.jupyter.widget-view+json``) cannot run without a kernel:
  its output is dropped, the stored first frame (a PNG output beside it) is what the page
  shows, and a note under it links to the explorer running live. On the explorer's own page
  that cell is tagged ``mhattn-still-frame``: the live explorer hides it when it starts, so
  the frame shows only where no JavaScript runs;
- ``# NBVAL_...`` marker lines (for the notebook tests) are dropped from the code shown;
- a ``<!-- live-figure: NAME -->`` comment in a Markdown cell (which JupyterLab and GitHub do not
  show) becomes the container of that live figure, drawn in the browser by the explorer's engine
  (book/live_explorer.py adds the scripts to every page that holds one).

The live explorer and figures compute in the browser, in JavaScript, what mhattn computes. The
command (``main``) also writes what mhattn gives for a representative set of their states into
``book/goldens/`` (book/twin_goldens.py), the numbers the JavaScript is held to.

The landing page (``book/index.md``) gets, where it says ``<!-- chapters -->``, one line per
notebook: its title, a one-line promise (``PROMISES``) and a reading time estimated from
its words and lines of code (``reading_minutes``); where it says ``<!-- contents -->``, the
sidebar's tables of contents; where it says ``<!-- first-command -->``, the README's command
that installs the chapter and opens it. Its picture comes from ``figures/``.

A page under each former name in ``MOVED`` sends the reader on to the page that holds it now
(at the same section), so that old links keep working.
"""

import argparse
import copy
import functools
import html
import json
import math
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
PAGES = ["index.md", "references.md", "accessibility.md"]
FIGURES = ROOT / "figures"
LANDING_FIGURES = ["02_attention_heatmap.png"]  # copied into the site for index.md
CHAPTERS_MARKER = "<!-- chapters -->"
CONTENTS_MARKER = "<!-- contents -->"  # index.md: where the site's tables of contents go
FIRST_COMMAND_MARKER = "<!-- first-command -->"  # README.md and index.md: the command that opens the chapter
APPENDIX = ["12_efficiency"]  # after the chapter and the explorer, under their own heading
# Former page names, each kept as a page that sends the reader on: old name -> the pages that
# now hold its sections (the first one unless the link's #section is found only on another).
MOVED = {
    "06_efficiency": ["12_efficiency"],
    "07_why_several_heads": ["08_why_several_heads"],
    "08_positions": ["06_positions"],
    "09_learning_to_attend": ["07_learning_to_attend", "09_induction_heads"],
    "10_production": ["11_production"],
}
REPOSITORY_NOTEBOOKS = "https://github.com/mhattn/mhattn/blob/HEAD/notebooks/"
# One line per notebook on the landing page: what a reader will be able to do after it.
PROMISES = {
    "01_softmax": "Turn scores into weights with a softmax that cannot overflow, and check it with numbers.",
    "02_scaled_dot_product_attention": "Build one attention head, measure why it divides by √d_k, "
                                       "and mask what a query may not see.",
    "03_splitting_heads": "Cut the model's width into heads and join them back, without scrambling the tokens.",
    "04_multi_head_attention": "Assemble the whole layer with one fused W_qkv projection, "
                               "and read every head's weights.",
    "05_embedding_shift": "See where the layer moves each token, and what such a picture can and cannot tell.",
    "06_positions": "Give attention a sense of order: sinusoidal encodings and rotary embeddings (RoPE).",
    "07_learning_to_attend": "Derive the backward pass by hand, check it, and train a two-layer model with it.",
    "08_why_several_heads": "Train one head against several on the same task, and see what splitting buys.",
    "09_induction_heads": "Read what the trained heads do: the induction circuit, measured and ablated.",
    "10_real_model": "Run a real language model on your own attention, and find its induction heads.",
    "11_production": "Online softmax, the KV cache, grouped queries and cross-attention: the layer as it is served.",
    "12_efficiency": "Appendix: count the cost, and compute the same numbers in memory that grows linearly.",
    "explore": "Every control in one place: change the sequence, the heads and the mask, and watch the weights.",
}
WORDS_PER_MINUTE = 200  # technical prose
SECONDS_PER_CODE_LINE = 6  # reading a line of code, not typing it
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LIVE_URL = "https://mybinder.org/v2/gh/mhattn/mhattn/HEAD?urlpath=voila/render/notebooks/explore.ipynb"
STILL_FRAME_TAG = "mhattn-still-frame"  # the explorer page's stored frame, for renderers without JavaScript
NBVAL_COMMENT = re.compile(r"^[ \t]*# NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)
LIVE_FIGURE = re.compile(r"<!--\s*live-figure:\s*(?P<name>[\w-]+)\s*-->")


#: Chapters whose widget has a stand-in on the page, a live figure of the same thing: notebook -> figure
STANDS_IN = {"10_real_model": "smollm"}


def live_note(has_frame, on_explorer_page=False, stem=None):
    """The Markdown that stands in for a live widget on a static page.

    ``stem``: a chapter of ``STANDS_IN``: the note points to its live figure, and to the
    chapter's notebook on Binder, instead of to the explorer.
    """
    frame = "The picture above is its first frame, as stored in the notebook. " if has_frame else ""
    here = ("The live explorer at the top of this page runs the same computation in your browser, with no kernel."
            if on_explorer_page else
            "[The book's explorer page](explore.html) has a live copy that runs in your browser with no kernel.")
    url = LIVE_URL
    if stem is not None:
        here = "The live figure above draws stored weights of the same model in your browser, with no kernel."
        url = f"https://mybinder.org/v2/gh/mhattn/mhattn/HEAD?urlpath=lab/tree/notebooks/{stem}.ipynb"
    return (f"*{frame}This Python widget's controls need a running kernel: [Run it live on Binder]({url}) "
            f"(the first start takes a few minutes). {here}*")


def chapter_notebooks(folder=NOTEBOOKS):
    """The chapter's notebooks in reading order: ``NN_topic.ipynb`` sorted, the explorer, then the appendix."""
    numbered = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    explorer = folder / "explore.ipynb"
    return ([path for path in numbered if path.stem not in APPENDIX] + ([explorer] if explorer.is_file() else [])
            + [path for path in numbered if path.stem in APPENDIX])


def is_solution(cell):
    """Whether a code cell is an exercise's solution: its input is collapsed and names a solution."""
    hidden = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
    return bool(hidden) and "solution" in "".join(cell.get("source", "")).lower()


def hide_tags(metadata, solution=False):
    """MyST-NB tags that collapse what JupyterLab collapses (``metadata.jupyter``).

    A solution folds whole, output included, even where only its input is marked hidden.
    """
    jupyter = metadata.get("jupyter", {})
    source, outputs = bool(jupyter.get("source_hidden")), bool(jupyter.get("outputs_hidden"))
    if source and (outputs or solution):
        return ["hide-cell"]
    if source:
        return ["hide-input"]
    if outputs:
        return ["hide-output"]
    return []


def chapter_number(stem):
    """``"02_scaled..."`` -> ``"2"``; ``""`` for a page without a number (the explorer)."""
    match = re.match(r"(\d+)_", stem)
    return str(int(match.group(1))) if match else ""


NOTEBOOK_LINK = re.compile(r"\[`?(?P<text>[\w.-]+\.ipynb)`?\]\((?P<target>[\w.-]+\.ipynb)\)")
GITHUB_LINK = re.compile(re.escape(REPOSITORY_NOTEBOOKS) + r"(?P<name>[\w.-]+\.ipynb)")


def readable_links(source, names):
    """Markdown with links to the chapter's notebooks that a page can follow.

    ``[02_x.ipynb](02_x.ipynb)`` becomes ``[](02_x.ipynb)``, which MyST shows as that page's
    title; a GitHub link to a notebook in ``names`` becomes a link to its page.
    """
    source = GITHUB_LINK.sub(lambda m: m.group("name") if m.group("name") in names else m.group(0), source)
    return NOTEBOOK_LINK.sub(lambda m: f"[]({m.group('target')})" if m.group("text") == m.group("target")
                             else m.group(0), source)


LINK_DEFINITION = re.compile(r"^ {0,3}\[(?P<label>[^\]]+)\]:[ \t]*(?P<target>\S+)[^\n]*\n?", re.MULTILINE)


def without_repeated_definitions(source, defined):
    """Drop link reference definitions (``[label]: url``) that an earlier cell already made.

    In JupyterLab each Markdown cell is its own document, so a notebook may repeat a
    definition; on the page the whole notebook is one document, where a repeat is an error.
    ``defined`` maps each label seen so far (lower case) to its target, and is updated.
    """
    def keep(match):
        label, target = match.group("label").lower(), match.group("target")
        if defined.get(label) == target:
            return ""
        defined.setdefault(label, target)
        return match.group(0)

    return LINK_DEFINITION.sub(keep, source)


CAPTION_TAG = "figure-caption"
CAPTION_BLOCK = re.compile(r"\*\*Figure[^*]*\*\*\s*(?P<caption>.*?)\s*<!--\s*alt:\s*(?P<alt>.*?)\s*-->", re.DOTALL)


def is_caption_cell(cell):
    """Whether a cell holds the captions of the figures just above it."""
    return cell["cell_type"] == "markdown" and CAPTION_TAG in cell.get("metadata", {}).get("tags", [])


def figure_texts(cell):
    """``[{"caption": ..., "alt": ...}, ...]``: the figures a caption cell describes, in order."""
    flat = lambda text: " ".join(text.split())  # noqa: E731
    return [{"caption": flat(m.group("caption")), "alt": flat(m.group("alt"))}
            for m in CAPTION_BLOCK.finditer("".join(cell["source"]))]


def caption_output(label, text):
    """The output that shows a figure's numbered caption under it."""
    anchor = "figure-" + label.split()[-1].replace(".", "-")
    body = f" {html.escape(text)}" if text else ""
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/html": f'<p class="figure-caption" id="{anchor}">'
                                  f'<span class="caption-number">{html.escape(label)}.</span>{body}</p>'}}


def is_image(output):
    return any(key.startswith("image/") for key in output.get("data", {}))


def with_captions(outputs, number, count, texts=()):
    """``outputs`` with a caption after each image.

    ``texts`` are the cell's figures' ``{"caption", "alt"}``, in order (where a figure has none,
    ``output.metadata["mhattn"]["caption"]`` is its caption). Returns ``(outputs, figures so
    far, alts)``: alts are each image's alt text ("" where the notebook gives none).
    """
    result, alts = [], []
    for output in outputs:
        result.append(output)
        if is_image(output):
            text = texts[len(alts)] if len(alts) < len(texts) else {}
            count += 1
            label = f"Figure {number}.{count}" if number else f"Figure {count}"
            caption = text.get("caption") or output.get("metadata", {}).get("mhattn", {}).get("caption", "")
            result.append(caption_output(label, caption))
            alts.append(text.get("alt", ""))
    return result, count, alts


def one_cell_per_figure(cell, alts):
    """The cell, cut after each figure's caption when it draws several (each image its own alt text).

    The pieces after the first show no code (``remove-input``); a cell folded whole stays one.
    """
    tags = cell["metadata"].get("tags", [])
    if len(alts) < 2 or "hide-cell" in tags:
        if alts and any(alts):
            cell["metadata"].setdefault("mystnb", {}).setdefault("image", {})["alt"] = " ".join(a for a in alts if a)
        return [cell]
    pieces, current, index = [], [], 0
    for output in cell["outputs"]:
        current.append(output)
        if output.get("data", {}).get("text/html", "").startswith('<p class="figure-caption"'):
            pieces.append(current)
            current, index = [], index + 1
    if current:
        pieces[-1] += current
    cells, blank = [], copy.deepcopy({**cell, "outputs": []})
    for index, outputs in enumerate(pieces):
        piece = copy.deepcopy(blank) if index else cell
        piece["outputs"] = outputs
        if index:
            piece["source"] = "# (the same cell, continued)"  # MyST-NB drops a code cell with no source
            piece["metadata"]["tags"] = sorted(set(tags) | {"remove-input"})
            if "id" in cell:
                piece["id"] = f"{cell['id']}-{index}"
        if alts[index]:
            piece["metadata"].setdefault("mystnb", {}).setdefault("image", {})["alt"] = alts[index]
        cells.append(piece)
    return cells


def for_the_page(notebook, stem="", names=()):
    """A copy of one notebook (a dict in nbformat 4) ready for a page without a kernel.

    ``stem`` (its file name without ``.ipynb``) numbers its figures; ``names`` are the chapter's
    notebook file names, whose links are made to lead to their pages.
    """
    notebook = copy.deepcopy(notebook)
    notebook.get("metadata", {}).pop("widgets", None)  # widget state: nothing on the page can use it
    number, figures, definitions = chapter_number(stem), 0, {}
    cells = notebook["cells"]
    texts = {}  # index of a cell that draws figures -> its figures' captions and alt texts
    for index, cell in enumerate(cells):
        if is_caption_cell(cell):
            drawn = [i for i in range(index) if cells[i]["cell_type"] == "code"
                     and any(is_image(output) for output in cells[i].get("outputs", []))]
            if drawn:
                texts[drawn[-1]] = figure_texts(cell)
    page = []
    for index, cell in enumerate(cells):
        if is_caption_cell(cell):
            continue  # its text is the caption under the figure
        page.append(cell)
        if cell["cell_type"] == "markdown":
            source = without_repeated_definitions("".join(cell["source"]), definitions)
            source = LIVE_FIGURE.sub(lambda m: live_explorer().figure_container(m.group("name")), source)
            cell["source"] = readable_links(source, set(names))
        if cell["cell_type"] != "code":
            continue
        metadata = cell.setdefault("metadata", {})
        tags = hide_tags(metadata, is_solution(cell))
        if tags:
            metadata["tags"] = sorted(set(metadata.get("tags", [])) | set(tags))
            if is_solution(cell):
                metadata.setdefault("mystnb", {}).update(code_prompt_show="Show the solution",
                                                         code_prompt_hide="Hide the solution")
        cell["source"] = NBVAL_COMMENT.sub("", "".join(cell["source"]))  # test markers mean nothing to a reader
        outputs = cell.get("outputs", [])
        kept = [output for output in outputs if WIDGET_VIEW not in output.get("data", {})]
        if len(kept) < len(outputs):
            has_frame = any(is_image(output) for output in kept)
            if stem == "explore":  # the live explorer hides this cell where JavaScript runs
                metadata["tags"] = sorted(set(metadata.get("tags", [])) | {STILL_FRAME_TAG})
            own = stem if stem in STANDS_IN else None  # the chapter's own live figure stands in for it
            kept.append({"output_type": "display_data", "metadata": {},
                         "data": {"text/markdown": live_note(has_frame, on_explorer_page=stem == "explore",
                                                             stem=own)}})
        cell["outputs"], figures, alts = with_captions(kept, number, figures, texts.get(index, ()))
        page[-1:] = one_cell_per_figure(cell, alts)
    notebook["cells"] = page
    return notebook


def title_of(notebook):
    """The text of a notebook's first ``# heading``."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            match = re.search(r"^# (.+)$", "".join(cell["source"]), re.MULTILINE)
            if match:
                return match.group(1).strip()
    raise ValueError("a chapter notebook must start with a '# Title' heading")


def reading_minutes(notebook):
    """Minutes to read a notebook: its prose at WORDS_PER_MINUTE, its visible code line by line.

    Rounded up to 5 minutes; collapsed solutions are not counted.
    """
    words, lines = 0, 0
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(source.split())
        elif cell["cell_type"] == "code" and not cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            lines += sum(1 for line in source.splitlines() if line.strip() and not NBVAL_COMMENT.match(line))
    minutes = words / WORDS_PER_MINUTE + lines * SECONDS_PER_CODE_LINE / 60
    return max(5, 5 * math.ceil(minutes / 5))


def promise_of(stem, notebook):
    """The landing page's line for a notebook: PROMISES, else the first sentence after its title."""
    if stem in PROMISES:
        return PROMISES[stem]
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            paragraphs = [p for p in "".join(cell["source"]).split("\n\n") if p.strip() and not p.startswith("#")]
            if paragraphs:
                return re.split(r"(?<=[.!?])\s", " ".join(paragraphs[0].split()), maxsplit=1)[0]
    return ""


def chapter_list(notebooks):
    """The landing page's Markdown list of the chapter: title (a link), reading time, promise.

    The appendix (``APPENDIX``) follows under its own heading.
    """
    def item(path):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        return (f"- **[{title_of(notebook)}](notebooks/{path.name})** "
                f"<span class=\"reading-time\">· {reading_minutes(notebook)} min</span>  \n"
                f"  {promise_of(path.stem, notebook)}")

    chapter = [item(path) for path in notebooks if path.stem not in APPENDIX]
    appendix = [item(path) for path in notebooks if path.stem in APPENDIX]
    text = "\n".join(chapter) + "\n"
    if appendix:
        text += ("\n**Appendix**, for readers who want the engineering behind the numbers:\n\n"
                 + "\n".join(appendix) + "\n")
    return text


def contents(notebooks):
    """The site's tables of contents (hidden on the landing page, shown in the sidebar), as MyST."""
    def toctree(caption, entries):
        return "```{toctree}\n:maxdepth: 1\n:hidden:\n:caption: " + caption + "\n\n" + "\n".join(entries) + "\n```\n"

    chapter = [f"notebooks/{path.stem}" for path in notebooks if path.stem not in APPENDIX]
    appendix = [f"notebooks/{path.stem}" for path in notebooks if path.stem in APPENDIX]
    trees = [toctree("The chapter", chapter)] + ([toctree("Appendix", appendix)] if appendix else [])
    return "\n".join([*trees, toctree("About the chapter", ["references", "accessibility"])])


def first_command(readme=ROOT / "README.md"):
    """The README's command that sets the chapter up and opens it (the block after FIRST_COMMAND_MARKER)."""
    block = readme.read_text(encoding="utf-8").split(FIRST_COMMAND_MARKER, 1)[1]
    return re.search(r"```bash\n(.*?)\n```", block, re.DOTALL).group(1).strip()


def with_first_command(text):
    """``text`` with each FIRST_COMMAND_MARKER line replaced by the README's command, at the marker's indent."""
    return re.sub(rf"^([ \t]*){re.escape(FIRST_COMMAND_MARKER)}[ \t]*$",
                  lambda m: "\n".join(m.group(1) + line for line in ["```bash", first_command(), "```"]),
                  text, flags=re.MULTILINE)


def stage(staging, notebooks=NOTEBOOKS):
    """Lay out the Sphinx source folder: the book's pages and the adjusted notebooks."""
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "notebooks").mkdir(parents=True)
    paths = chapter_notebooks(notebooks)
    for name in PAGES:
        text = (BOOK / name).read_text(encoding="utf-8")
        text = with_first_command(text.replace(CHAPTERS_MARKER, chapter_list(paths)).replace(CONTENTS_MARKER,
                                                                                             contents(paths)))
        (staging / name).write_text(text, encoding="utf-8")
    (staging / "figures").mkdir()
    for name in LANDING_FIGURES:
        shutil.copy2(FIGURES / name, staging / "figures" / name)
    names = [path.name for path in paths]
    for path in paths:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        page = for_the_page(notebook, path.stem, names)
        (staging / "notebooks" / path.name).write_text(json.dumps(page, indent=1), encoding="utf-8")


def book_module(name):
    """book/NAME.py as a module (this file also runs as a script, and is loaded by path in tests)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, BOOK / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def live_explorer():
    """book/live_explorer.py: the live explorer's data and scripts."""
    return book_module("live_explorer")


@functools.cache
def twin_goldens():
    """book/twin_goldens.py: mhattn's numbers for the live explorer's and figures' states."""
    return book_module("twin_goldens")


REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="robots" content="noindex">
<title>{title}</title>
<link rel="canonical" href="{target}.html">
<script>
(function () {{
  const pages = {pages};  // where each section is now: the first page, or another that holds the #section
  const id = decodeURIComponent(location.hash.slice(1));
  const page = pages.slice(1).find((p) => id && p.ids.includes(id)) || pages[0];
  location.replace(page.name + ".html" + location.hash);
}})();
</script>
<noscript><meta http-equiv="refresh" content="0; url={target}.html"></noscript>
</head>
<body><p>This page is now <a href="{target}.html">{title}</a>.</p></body>
</html>
"""
PAGE_ID = re.compile(r'\bid="([^"]+)"')


def write_redirects(out, notebooks=NOTEBOOKS):
    """Write a page under each former name in ``MOVED`` that leads to the page holding it now.

    A link to an old page and section (``08_positions.html#rope``) lands on the new page, at
    that section. Names whose new page is not built (a partial build) are skipped.
    """
    folder = Path(out) / "notebooks"
    for old, new in MOVED.items():
        built = [name for name in new if (folder / f"{name}.html").is_file()]
        if not built or built[0] != new[0]:
            continue
        if (folder / f"{old}.html").exists():
            raise RuntimeError(f"{old}.html is a page of the chapter: it cannot also lead elsewhere")
        first_ids = set(PAGE_ID.findall((folder / f"{built[0]}.html").read_text(encoding="utf-8")))
        pages = [{"name": built[0], "ids": []}] + [
            {"name": name, "ids": sorted(set(PAGE_ID.findall((folder / f"{name}.html").read_text(encoding="utf-8")))
                                         - first_ids)} for name in built[1:]]
        title = title_of(json.loads((Path(notebooks) / f"{built[0]}.ipynb").read_text(encoding="utf-8")))
        (folder / f"{old}.html").write_text(REDIRECT_PAGE.format(title=html.escape(title), target=built[0],
                                                                 pages=json.dumps(pages)), encoding="utf-8")


def build(out=DEFAULT_OUT, quiet=True, notebooks=NOTEBOOKS, goldens=None):
    """Stage and build the site into ``out`` from the notebooks in ``notebooks``; return the seconds it took.

    With ``goldens`` (a folder), also write there mhattn's numbers for the live pages' states.
    """
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
    live_explorer().install(out)  # the explorer's and the live figures' pages compute in the browser
    write_redirects(out, notebooks)
    if goldens is not None:
        twin_goldens().write(goldens)  # what their JavaScript must compute
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the site goes (default: build/book)")
    parser.add_argument("--verbose", action="store_true", help="show Sphinx's progress")
    args = parser.parse_args(argv)
    try:
        seconds = build(args.out, quiet=not args.verbose, goldens=twin_goldens().GOLDENS)
    except subprocess.CalledProcessError as error:
        sys.exit(f"book: Sphinx failed (exit code {error.returncode}); the messages above say why")
    print(f"book: built {args.out / 'index.html'} in {seconds:.1f} s")


if __name__ == "__main__":
    main()
