"""The notebooks as a whole.

nbval (see pyproject.toml) re-runs every notebooks/*.ipynb and compares its outputs. These
tests check what nbval cannot: that each notebooks/NAME.py and NAME.ipynb hold the same
cells, that the .ipynb was executed top to bottom in one kernel, that the stored outputs are
clean, that notebooks import the package instead of copying it, that every exercise has its
placeholder, check and collapsed solution, and that notebooks/refresh.sh does its job. What the
exercise checks say to right and wrong answers, and that a plain run writes no file, is checked
in each notebook's own nbval kernel after its last cell (``conftest.py``, exercise_answers.py).
"""

import ast
import importlib
import importlib.util
import io
import json
import os
import pkgutil
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import mhattn
from mhattn.pictures.figures import SAVE_VARIABLE, save_figure

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


# What "in sync", "executed" and "clean" mean -------------------------------------------------


def notebook_names(folder):
    """Every NAME with a NAME.py or a NAME.ipynb in ``folder``."""
    return sorted({path.stem for pattern in ("*.py", "*.ipynb") for path in folder.glob(pattern)})


def cell_inputs(nb):
    """What the two halves of a pair must agree on: each cell's type and source."""
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def pair_differences(folder, name):
    """How NAME.py and NAME.ipynb in ``folder`` disagree, as messages; empty when in sync."""
    py_path, ipynb_path = folder / f"{name}.py", folder / f"{name}.ipynb"
    missing = [path.name for path in (py_path, ipynb_path) if not path.exists()]
    if missing:
        return [f"{' and '.join(missing)} missing: every notebook is a .py (source) plus an .ipynb (outputs)"]
    py_cells = cell_inputs(jupytext.read(py_path))
    ipynb_cells = cell_inputs(nbformat.read(ipynb_path, as_version=4))
    problems = []
    if len(py_cells) != len(ipynb_cells):
        problems.append(f"{py_path.name} has {len(py_cells)} cells, {ipynb_path.name} has {len(ipynb_cells)}")
    for index, (from_py, from_ipynb) in enumerate(zip(py_cells, ipynb_cells, strict=False)):
        if from_py != from_ipynb:
            problems.append(f"cell {index} differs: .py has {from_py!r:.100}, .ipynb has {from_ipynb!r:.100}")
            break  # after an inserted cell everything differs; the first difference is the useful one
    return problems


def execution_problems(nb):
    """Why ``nb`` does not look like one fresh top-to-bottom run; empty when it does."""
    code = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()]
    problems = []
    if not any(cell.outputs for cell in code):
        problems.append("no code cell has an output: the notebook was saved without running it")
    counts = [cell.execution_count for cell in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(f"execution counts are {counts}, not 1, 2, 3, ...: run it top to bottom in a fresh kernel")
    return problems


def output_problems(nb):
    """Stored outputs that would be unstable or show the reader something wrong."""
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            kind = output.output_type
            if kind == "error":
                problems.append(f"cell {index} raised {output.ename}")
            elif kind == "stream" and output.name == "stderr":
                problems.append(f"cell {index} wrote to stderr (a warning?): {output.text!r:.120}")
            data = output.get("data", {})
            text = output.get("text", "") + data.get("text/plain", "")
            if " at 0x" in text:
                problems.append(f"cell {index} shows a memory address, different on every run: {text!r:.120}")
            if "<Figure size 640x480" in text:
                problems.append(f"cell {index} has a figure of matplotlib's default size: pass figsize=")
            if "image/svg+xml" in data:
                problems.append(f"cell {index} has an SVG image, which nbval compares byte by byte: use PNG")
    return problems


def last_token(source):
    """The last Python token of a cell, ignoring comments and IPython magics."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}
    tokens = [token.string for token in tokenize.generate_tokens(io.StringIO(code).readline) if token.type not in skip]
    return tokens[-1] if tokens else None


def source_problems(nb):
    """Code that runs fine in JupyterLab but not under nbval."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and last_token(cell.source) == ";":
            problems.append(
                f"cell {index} hides its result with a trailing ';', which nbval ignores (it runs cells with "
                "store_history=False, and IPython looks for the ';' in the history): assign it, or end with plt.show()"
            )
    return problems


def package_names():
    """Public functions and classes of mhattn's public modules, in every layer (each imported, so the set is fixed)."""
    names = set()
    for info in pkgutil.walk_packages(mhattn.__path__, "mhattn."):
        if info.name.rpartition(".")[2].startswith("_") or info.name.startswith("mhattn.checks"):
            continue  # private modules, and the doors: no notebook shows them
        module = importlib.import_module(info.name)
        names |= {
            name
            for name, obj in vars(module).items()
            if callable(obj) and getattr(obj, "__module__", "") == module.__name__ and not name.startswith("_")
        }
    return names


def notebook_code(nb):
    """The code cells as one Python program, IPython magics (``%matplotlib``) removed."""
    cells = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    lines = [line for cell in cells for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


# The checks, applied to the real notebooks ---------------------------------------------------

NAMES = notebook_names(NOTEBOOKS)


def read_ipynb(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_the_chapter_has_notebooks():
    assert [name for name in NAMES if name[:2].isdigit()], f"no NN_name notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("name", NAMES)
def test_py_and_ipynb_hold_the_same_cells(name):
    problems = pair_differences(NOTEBOOKS, name)
    assert not problems, "\n".join(problems) + "\nrefresh the pair with: bash notebooks/refresh.sh"


@pytest.mark.parametrize("name", NAMES)
def test_ipynb_was_executed_top_to_bottom(name):
    problems = execution_problems(read_ipynb(name))
    assert not problems, "\n".join(problems) + "\nrefresh with: bash notebooks/refresh.sh"


@pytest.mark.parametrize("name", NAMES)
def test_kernelspec_is_python3_on_both_halves(name):
    assert read_ipynb(name).metadata.get("kernelspec") == KERNELSPEC
    assert jupytext.read(NOTEBOOKS / f"{name}.py").metadata.get("kernelspec") == KERNELSPEC


@pytest.mark.parametrize("name", NAMES)
def test_stored_outputs_are_clean(name):
    problems = output_problems(read_ipynb(name))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_code_runs_the_same_under_nbval(name):
    problems = source_problems(read_ipynb(name))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_imports_the_package_and_copies_none_of_it(name):
    tree = ast.parse(notebook_code(read_ipynb(name)))
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "mhattn" in imported, f"{name} should import what it teaches from mhattn"
    defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    copied = defined & package_names()
    assert not copied, f"{name} defines {sorted(copied)}, which mhattn already has: show it with show_source"


# The checks can fail: the same functions on small notebooks made to be wrong -------------------


def write_pair(folder, name, nb):
    jupytext.write(nb, folder / f"{name}.py", fmt="py:percent")
    nbformat.write(nb, folder / f"{name}.ipynb")


def tiny_notebook(code="print(6 * 7)"):
    return new_notebook(
        cells=[new_markdown_cell("# A tiny notebook"), new_code_cell(code)], metadata={"kernelspec": KERNELSPEC}
    )


def test_pair_check_passes_a_pair_written_from_one_notebook(tmp_path):
    write_pair(tmp_path, "01_tiny", tiny_notebook())
    assert pair_differences(tmp_path, "01_tiny") == []


def test_pair_check_finds_an_edited_source(tmp_path):
    write_pair(tmp_path, "01_tiny", tiny_notebook())
    py = tmp_path / "01_tiny.py"
    py.write_text(py.read_text().replace("6 * 7", "6 * 8"))
    assert pair_differences(tmp_path, "01_tiny") == [
        "cell 1 differs: .py has ('code', 'print(6 * 8)'), .ipynb has ('code', 'print(6 * 7)')"
    ]


def test_pair_check_finds_a_changed_cell_type_and_an_added_cell(tmp_path):
    nb = tiny_notebook()
    write_pair(tmp_path, "01_tiny", nb)
    nb.cells[1] = new_markdown_cell("print(6 * 7)")
    nb.cells.append(new_code_cell("1 + 1"))
    nbformat.write(nb, tmp_path / "01_tiny.ipynb")
    problems = pair_differences(tmp_path, "01_tiny")
    assert problems[0] == "01_tiny.py has 2 cells, 01_tiny.ipynb has 3"
    assert problems[1].startswith("cell 1 differs: .py has ('code', ") and "('markdown', " in problems[1]


@pytest.mark.parametrize("missing", ["py", "ipynb"])
def test_pair_check_finds_a_missing_half(tmp_path, missing):
    write_pair(tmp_path, "01_tiny", tiny_notebook())
    (tmp_path / f"01_tiny.{missing}").unlink()
    assert notebook_names(tmp_path) == ["01_tiny"]
    assert pair_differences(tmp_path, "01_tiny")[0].startswith(f"01_tiny.{missing} missing")


def test_execution_check_finds_an_unexecuted_and_an_out_of_order_notebook():
    nb = tiny_notebook()
    nb.cells.append(new_code_cell("x = 1"))
    assert execution_problems(nb) == [
        "no code cell has an output: the notebook was saved without running it",
        "execution counts are [None, None], not 1, 2, 3, ...: run it top to bottom in a fresh kernel",
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb.cells[1].execution_count, nb.cells[2].execution_count = 3, 2
    assert execution_problems(nb) == [
        "execution counts are [3, 2], not 1, 2, 3, ...: run it top to bottom in a fresh kernel"
    ]
    nb.cells[1].execution_count, nb.cells[2].execution_count = 1, 2
    assert execution_problems(nb) == []


def test_output_check_finds_warnings_addresses_default_figures_and_svg():
    nb = tiny_notebook()
    new_output = nbformat.v4.new_output
    nb.cells[1].outputs = [
        new_output("stream", name="stderr", text="RuntimeWarning: overflow\n"),
        new_output("execute_result", data={"text/plain": "<object at 0x7f3a2b>"}, execution_count=1),
        new_output("display_data", data={"text/plain": "<Figure size 640x480 with 1 Axes>"}),
        new_output("display_data", data={"image/svg+xml": "<svg/>", "text/plain": "<Figure size 500x400>"}),
        new_output("error", ename="ValueError", evalue="bad", traceback=[]),
    ]
    problems = output_problems(nb)
    assert len(problems) == 5
    for words in ["stderr", "memory address", "default size", "SVG", "raised ValueError"]:
        assert any(words in problem for problem in problems), words


def test_source_check_finds_a_result_hidden_by_a_semicolon():
    assert source_problems(tiny_notebook("fig.legend();  # hide the Legend repr")) != []
    assert source_problems(tiny_notebook("x = [1, 2];\nlen(x)")) == []
    assert source_problems(tiny_notebook("legend = fig.legend()\n# done;")) == []


def test_copy_check_sees_a_pasted_package_function():
    nb = tiny_notebook("%matplotlib inline\nimport mhattn\n\ndef split_heads(x, num_heads):\n    return x")
    defined = {node.name for node in ast.walk(ast.parse(notebook_code(nb))) if isinstance(node, ast.FunctionDef)}
    assert defined & package_names() == {"split_heads"}


# The refresh script, on a copy of the layout in a temporary folder ------------------------------


def run_refresh(root, *args):
    script = root / "notebooks" / "refresh.sh"
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(script), *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def tiny_repo(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "refresh.sh").write_text((NOTEBOOKS / "refresh.sh").read_text())
    code = "\n".join(
        [
            "from pathlib import Path",
            "Path('../figures').mkdir(exist_ok=True)",
            "Path('../figures/tiny.txt').write_text('ok')",
            "",
        ]
    )
    code += "import ipywidgets\nprint(6 * 7)\nipywidgets.IntSlider(value=3)"  # a widget: its model ids are random
    jupytext.write(tiny_notebook(code), notebooks / "01_tiny.py", fmt="py:percent")
    return tmp_path


def test_refresh_writes_an_executed_twin_repeatably_and_follows_an_edited_py(tiny_repo):
    notebooks = tiny_repo / "notebooks"
    result = run_refresh(tiny_repo)  # no arguments: every notebook
    assert result.returncode == 0, result.stderr
    assert "notebooks/01_tiny.py -> notebooks/01_tiny.ipynb" in result.stdout
    assert pair_differences(notebooks, "01_tiny") == []
    first = (notebooks / "01_tiny.ipynb").read_text()
    nb = nbformat.reads(first, as_version=4)
    assert execution_problems(nb) == [] and output_problems(nb) == []
    assert nb.cells[1].outputs[0].text == "42\n"
    assert "jupytext" not in nb.metadata, "the .py's format header does not belong in the .ipynb"
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    view = nb.cells[1].outputs[1].data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] in state and state[view["model_id"]]["state"]["value"] == 3
    assert (tiny_repo / "figures" / "tiny.txt").read_text() == "ok", "the notebook must run in notebooks/"

    assert run_refresh(tiny_repo, str(notebooks / "01_tiny.py")).returncode == 0  # a path from elsewhere
    assert (notebooks / "01_tiny.ipynb").read_text() == first, "a second refresh must change nothing (widget ids too)"

    py = notebooks / "01_tiny.py"
    py.write_text(py.read_text().replace("6 * 7", "6 * 8"))
    assert run_refresh(tiny_repo).returncode == 0
    nb = nbformat.read(notebooks / "01_tiny.ipynb", as_version=4)
    assert nb.cells[1].outputs[0].text == "48\n"
    assert len(nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]) == len(state)
    assert [cell.id for cell in nb.cells] == [cell.id for cell in nbformat.reads(first, as_version=4).cells]


def test_refresh_refuses_to_drop_newer_edits_made_in_the_ipynb(tiny_repo):
    notebooks = tiny_repo / "notebooks"
    nb = jupytext.read(notebooks / "01_tiny.py")
    nb.cells[0].source = "# Edited in JupyterLab"
    nbformat.write(nb, notebooks / "01_tiny.ipynb")
    os.utime(notebooks / "01_tiny.py", (1, 1))  # the .py is older than the edit
    result = run_refresh(tiny_repo)
    assert result.returncode != 0 and "jupytext --sync" in result.stderr
    assert nbformat.read(notebooks / "01_tiny.ipynb", as_version=4).cells[0].source == "# Edited in JupyterLab"
    assert run_refresh(tiny_repo, "--force").returncode == 0
    assert nbformat.read(notebooks / "01_tiny.ipynb", as_version=4).cells[0].source == "# A tiny notebook"


# Every exercise of every chapter notebook: a "..." to replace, a check that says "not yet",
# then a collapsed, executed solution that passes the same check --------------------------------

CHECKER = re.compile(r"(?:@exercise\(.*?\)\n)?def check_exercise_(\d+)\(", re.DOTALL)  # plain or decorated


@pytest.mark.parametrize("name", [name for name in notebook_names(NOTEBOOKS) if name[:2].isdigit()])
def test_every_exercise_has_a_placeholder_a_check_and_a_collapsed_executed_solution(name):
    code = [cell for cell in read_ipynb(name).cells if cell.cell_type == "code"]
    checks = [index for index, cell in enumerate(code) if CHECKER.match(cell.source)]
    assert len(checks) >= 2, f"{name} has {len(checks)} exercises"
    for number, index in enumerate(checks, start=1):
        assert f"def check_exercise_{number}(" in code[index].source
        reader, check, solution = code[index - 1], code[index], code[index + 1]
        assert "..." in reader.source, f"exercise {number}: the reader's cell should hold the placeholder ..."
        printed = "".join(output.get("text", "") for output in check.outputs if output.output_type == "stream")
        assert f"Exercise {number}: not yet" in printed, f"exercise {number}: {printed!r}"
        assert solution.metadata.get("jupyter", {}).get("source_hidden") is True, f"exercise {number}: not collapsed"
        runs_the_check = re.search(rf"check_exercise_{number}\(\(?solution_", solution.source)
        assert runs_the_check, f"exercise {number}: the solution should run through the same check"
        printed = "".join(output.get("text", "") for output in solution.outputs if output.output_type == "stream")
        assert re.search(rf"Exercise {number}: .*correct\.\n", printed), f"exercise {number}: {printed!r}"


@pytest.mark.parametrize("name", [name for name in notebook_names(NOTEBOOKS) if name[:2].isdigit()])
def test_every_chapter_notebook_ends_with_references(name):
    markdown = [cell.source for cell in read_ipynb(name).cells if cell.cell_type == "markdown"]
    assert any("## References" in source for source in markdown[-3:]), f"{name}: no References section at its end"
    text = "\n".join(markdown)
    assert "Vaswani" in text[text.index("## References") :], f"{name}: its references should include Vaswani et al."


# Figures: saved only by notebooks/refresh.sh, never by a plain run --------------------------------


def savefig_calls(source):
    """Line numbers of every ``something.savefig(...)`` call in a Python source."""
    tree = ast.parse(source)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "savefig"
    ]


def test_savefig_finder_sees_a_direct_call_and_not_save_figure():
    assert savefig_calls("fig.savefig('a.png')\nsave_figure(fig, 'b.png')\nax.figure.savefig(p)") == [1, 3]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_saves_figures_only_through_save_figure(name):
    code = notebook_code(jupytext.read(NOTEBOOKS / f"{name}.py"))
    lines = savefig_calls(code)
    assert not lines, (
        f"{name} calls savefig directly (lines {lines} of its code cells): use "
        "mhattn.pictures.figures.save_figure(fig, FIGURES / NAME), which writes only when refresh.sh runs it"
    )


def test_save_figure_writes_only_when_the_refresh_variable_is_set(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots(figsize=(2, 2))
    path = tmp_path / "figure.png"
    for value in (None, "0", "yes", ""):  # unset, and anything but "1"
        if value is None:
            monkeypatch.delenv(SAVE_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(SAVE_VARIABLE, value)
        assert save_figure(fig, path) is False and not path.exists(), value
    monkeypatch.setenv(SAVE_VARIABLE, "1")
    assert save_figure(fig, path) is True and path.read_bytes().startswith(b"\x89PNG")
    plt.close(fig)


def test_refresh_saves_figures_and_records_the_smallest_text_of_each_image(tiny_repo):
    notebooks = tiny_repo / "notebooks"
    code = "\n".join(
        [
            "%matplotlib inline",
            "import os",
            "import matplotlib.pyplot as plt",
            "print(os.environ.get('MHATTN_SAVE_FIGURES'))",
            "fig, ax = plt.subplots(figsize=(3, 2), dpi=100)",
            "ax.set_title('nine points', fontsize=9)",
            "ax.text(0.5, 0.5, 'hidden', fontsize=4, visible=False)",  # not drawn: not counted
            "ax.text(0.2, 0.2, ' ', fontsize=3)",  # nothing to read: not counted
            "ax.tick_params(labelsize=12)",
            "plt.show()",
        ]
    )
    jupytext.write(tiny_notebook(code), notebooks / "01_tiny.py", fmt="py:percent")
    result = run_refresh(tiny_repo)
    assert result.returncode == 0, result.stderr
    nb = nbformat.read(notebooks / "01_tiny.ipynb", as_version=4)
    assert pair_differences(notebooks, "01_tiny") == [], "the setup cell must not stay in the .ipynb"
    assert execution_problems(nb) == [] and nb.cells[1].execution_count == 1
    outputs = nb.cells[1].outputs
    assert outputs[0].text == "1\n", "refresh.sh runs the kernel with MHATTN_SAVE_FIGURES=1"
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(images) == 1
    assert images[0].metadata["mhattn"] == {"min_font_px": round(9 * 100 / 72, 2), "dpi": 100.0}
    assert "mhattn" not in images[0].metadata.get("image/png", {})


# Exercise solutions: folded whole, and printing no answer ---------------------------------------


def solution_cells(nb):
    """(exercise number, cell) of each solution: the code cell right after check_exercise_N's."""
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    found = []
    for index, cell in enumerate(code):
        match = CHECKER.match(cell.source)
        if match and index + 1 < len(code):
            found.append((int(match.group(1)), code[index + 1]))
    return found


CHAPTER = [name for name in NAMES if name[:2].isdigit()]


@pytest.mark.parametrize("name", CHAPTER)
def test_every_solution_folds_its_code_and_its_output_in_both_halves(name):
    for half in (jupytext.read(NOTEBOOKS / f"{name}.py"), read_ipynb(name)):
        solutions = solution_cells(half)
        assert solutions, f"{name}: no exercise solutions found"
        for number, cell in solutions:
            folded = cell.metadata.get("jupyter", {})
            assert folded.get("source_hidden") is True and folded.get("outputs_hidden") is True, (
                f'{name}, exercise {number}: the solution cell needs jupyter={{"source_hidden": true, '
                f'"outputs_hidden": true}} (got {folded})'
            )


@pytest.mark.parametrize("name", CHAPTER)
def test_a_solution_prints_only_that_it_passed(name):
    for number, cell in solution_cells(read_ipynb(name)):
        printed = "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")
        assert printed == f"Exercise {number}: correct.\n", (
            f"{name}, exercise {number}: the solution prints {printed!r}; print only the check's verdict, "
            "the answer belongs in the folded code's comments"
        )


# Notebook sources fit a narrow column --------------------------------------------------------------

NOTEBOOK_LINE_LENGTH = 88


def long_lines(text, limit=NOTEBOOK_LINE_LENGTH):
    """(line number, length) of lines over ``limit`` characters, as ruff's E501 counts them.

    Two kinds of line cannot be wrapped and are allowed, as ruff allows them: a comment
    holding a single word after its ``#`` (a long URL, say), and a line that ends with a URL
    starting within the limit (a Markdown link definition, ``# [name]: https://...``).
    """
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) <= limit:
            continue
        words = line.split()
        if words[0] == "#" and len(words) == 2:
            continue
        if re.match(r"https?://", words[-1]) and line.rindex(words[-1]) < limit:
            continue
        found.append((number, len(line)))
    return found


def test_long_line_finder_counts_characters_and_spares_lone_urls():
    text = "x = 1\n" + "y" * 89 + "\n# " + "é" * 86 + "\n# [a](" + "u" * 100 + ")\n# two " + "w" * 90
    assert long_lines(text) == [(2, 89), (5, 96)]
    link = "# [nb]: https://example.org/" + "p" * 80  # a link definition: ends with a URL that starts early
    late = "# " + "w " * 45 + "https://example.org/"  # a URL that starts past the limit does not excuse the line
    assert long_lines(link + "\n" + late) == [(2, len(late))]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_source_lines_fit_88_characters(name):
    found = long_lines((NOTEBOOKS / f"{name}.py").read_text(encoding="utf-8"))
    assert not found, f"notebooks/{name}.py has lines over {NOTEBOOK_LINE_LENGTH} characters: " + ", ".join(
        f"line {number} ({length})" for number, length in found
    )


# Every listing a notebook shows fits one screen ----------------------------------------------------

LISTING_LINES = 25


def listing_lengths(nb):
    """Lines, blank ones included (the height the reader sees), of each ```python listing that a
    code cell's stored output shows (``show_source``)."""
    lengths = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            shown = output.get("data", {}).get("text/markdown", "")
            if shown.startswith("```python"):
                code = shown.strip().splitlines()[1:-1]  # without the fences
                lengths.append(len(code))
    return lengths


def test_listing_lengths_count_the_code_between_the_fences():
    cell = new_code_cell("show_source(f)")
    shown = {"text/markdown": "```python\na\n\nb\n```"}
    cell.outputs = [nbformat.v4.new_output("execute_result", shown, execution_count=1)]
    assert listing_lengths(new_notebook(cells=[cell, new_markdown_cell("```python\nx\n```")])) == [3]


@pytest.mark.parametrize("name", NAMES)
def test_every_listing_fits_25_lines(name):
    lengths = listing_lengths(read_ipynb(name))
    assert max(lengths, default=0) <= LISTING_LINES, f"{name} shows listings of {sorted(lengths)} lines"


# The core five: each read in one sitting, no exercise answered before the reader tries ----------

CORE = [
    "01_softmax",
    "02_scaled_dot_product_attention",
    "03_splitting_heads",
    "04_multi_head_attention",
    "05_embedding_shift",
]


def book_build():
    """book/build.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("book_build_for_notebooks", ROOT / "book" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_each_notebook_reads_in_at_most_40_minutes_by_the_books_estimate(name):
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    assert book_build().reading_minutes(notebook) <= 40


@pytest.mark.parametrize("name", CORE)
def test_core_notebook_keeps_every_exercise_check_in_a_collapsed_cell(name):
    """A visible checker shows what it compares with: the answer, before the reader tries."""
    for half in (jupytext.read(NOTEBOOKS / f"{name}.py"), read_ipynb(name)):
        checks = [cell for cell in half.cells if cell.cell_type == "code" and CHECKER.match(cell.source)]
        assert checks, f"{name}: no exercise checks found"
        for cell in checks:
            number = CHECKER.match(cell.source).group(1)
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, (
                f"{name}, exercise {number}: the check's cell should be collapsed"
            )


