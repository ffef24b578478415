"""Voila's settings for the explorer app, read when ``voila`` starts in this folder.

``voila notebooks/explore.ipynb``, run here, reads this file and ``voila.json``. The JSON file
loads only the widget managers (JupyterLab's other extensions are built for a later JupyterLab
than Voila's) and picks the template ``mhattn``; this file lets Voila find that template, in
``voila_template/voila/templates/mhattn/``: Voila's lab template without the Font Awesome style
sheets it fetches from a CDN (so the page asks nothing of any other server), and with webpack's
notes on shared-module versions left off the browser console. Its ``MappingKernelManager``
section shuts down a page's kernel (about 120 MB) once the page has been closed for two minutes:
Voila starts a kernel for every page view, and would otherwise keep each one until it stops.
"""

import os
from pathlib import Path

_TEMPLATES = str(Path(__file__).resolve().parent / "voila_template")  # a Jupyter data folder
_searched = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
if _TEMPLATES not in _searched:
    os.environ["JUPYTER_PATH"] = os.pathsep.join([_TEMPLATES, *_searched])

if __name__ == "__main__":  # `python -m voila`, run here, finds this file before Voila: start Voila itself
    import runpy
    import sys

    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    runpy.run_module("voila", run_name="__main__", alter_sys=True)
