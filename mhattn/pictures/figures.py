"""Saving the chapter's figures into ``figures/``, only when the notebooks are refreshed.

The notebooks draw every figure inline. ``figures/`` holds PNG copies for the README and
the book; they are rewritten only by ``notebooks/refresh.sh``, which sets
``MHATTN_SAVE_FIGURES=1``. A plain run (a reader's kernel, nbval, the tests) writes nothing,
so running the chapter never changes a tracked file, whatever matplotlib version draws it.
"""

import os
from pathlib import Path

SAVE_VARIABLE = "MHATTN_SAVE_FIGURES"


def save_figure(fig, path, **savefig_kwargs):
    """Write ``fig`` to ``path`` (PNG, 100 dpi, no timestamp) when refreshing; return whether it wrote.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or pathlib.Path
        Where the PNG goes, e.g. ``FIGURES / "04_attention_heads.png"``.
    **savefig_kwargs
        Passed on to ``fig.savefig`` (``bbox_inches="tight"``, say).
    """
    if os.environ.get(SAVE_VARIABLE) != "1":
        return False
    savefig_kwargs = {"dpi": 100, "metadata": {"Software": None}, **savefig_kwargs}
    fig.savefig(Path(path), **savefig_kwargs)
    return True
