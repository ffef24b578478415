"""Sphinx configuration of the chapter as a static book (built by book/build.py).

MyST-NB renders the notebooks' stored outputs (nothing is executed), the theme is
sphinx-book-theme from PyPI, sphinx-copybutton puts a copy button on each code cell, and
MathJax 3 is copied into the site from the django-static-mathjax wheel, so a built page asks
nothing of any other host. ``_static/book.css`` shows figures at the size they were drawn
and lets wide code and math scroll in their own box; ``_static/search-snippets.js`` shows
the search results' snippets from the chapter's text (not the theme's buttons), with the
math as text instead of raw TeX; ``_static/figure-zoom.js`` opens a figure full size on one tap
(on a phone, a cue under each figure, never on it, says so).
"""

import shutil
from importlib.util import find_spec
from pathlib import Path

project = "mhattn: multi-head attention from scratch"
author = "the mhattn authors"
copyright = "the mhattn authors, MIT licence"  # noqa: A001 (Sphinx's name)
REPOSITORY = "https://github.com/mhattn/mhattn"
BINDER = "https://mybinder.org/v2/gh/mhattn/mhattn/HEAD"

extensions = ["myst_nb", "sphinx_copybutton"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"

# --- notebooks: stored outputs only ---------------------------------------------------------
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js = {}  # the default loads require.js and the widget manager from a CDN
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# --- copy buttons: on the code a reader runs, not on what it printed --------------------------
copybutton_selector = ", ".join(f"div.{kind} div.highlight pre" for kind in
                                ("cell_input", "highlight-bash", "highlight-python", "highlight-default"))
copybutton_exclude = ".linenos, .gp, .go"

# --- math: MathJax 3 served from the site itself ---------------------------------------------
MATHJAX_FILES = ["tex-chtml.js", "input", "output/chtml", "ui", "a11y", "adaptors"]
mathjax_path = "mathjax/tex-chtml.js"  # relative to _static/
mathjax3_config = {
    "tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
    "options": {"menuOptions": {"settings": {"assistiveMml": False}}},
}

# --- theme -----------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "mhattn: multi-head attention from scratch"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_js_files = ["search-snippets.js", "figure-zoom.js"]
html_favicon = "_static/favicon.svg"
html_use_index = False  # the chapter has no index entries: no empty index page
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = True  # the download button offers each page's notebook
html_context = {"default_mode": "light"}  # pydata-sphinx-theme logs an error when it is unset
html_theme_options = {
    "repository_url": REPOSITORY,
    "use_repository_button": True,
    "use_download_button": True,
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navbar_persistent": [],  # the sidebar has the search field: no second one in a header bar
    "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    "path_to_docs": "",
    "repository_branch": "HEAD",
}


def mathjax_folder():
    """The ``es5`` folder of MathJax 3 that the django-static-mathjax wheel installs."""
    spec = find_spec("mathjax")
    if spec is None or spec.origin is None:
        raise RuntimeError("MathJax is missing: pip install django-static-mathjax (part of mhattn's [book] extra)")
    folder = Path(spec.origin).parent / "static" / "mathjax"
    if not (folder / "es5" / "tex-chtml.js").is_file():
        raise RuntimeError(f"no MathJax 3 build under {folder}: reinstall django-static-mathjax")
    return folder


def copy_mathjax(app, exception):
    """Copy the parts of MathJax that a page loads (no speech engine) into ``_static/mathjax``."""
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_folder()
    target = Path(app.outdir) / "_static" / "mathjax"
    shutil.rmtree(target, ignore_errors=True)
    for name in MATHJAX_FILES:
        origin = source / "es5" / name
        if origin.is_dir():
            shutil.copytree(origin, target / name)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / name)
    shutil.copy2(source / "LICENSE", target / "LICENSE")


def setup(app):
    mathjax_folder()  # fail early, before Sphinx reads anything
    app.connect("build-finished", copy_mathjax)
