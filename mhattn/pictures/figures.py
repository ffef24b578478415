"""Saving the chapter's figures into ``figures/``, only when the notebooks are refreshed.

The notebooks draw every figure inline. ``figures/`` holds PNG copies for the README and
the book; they are rewritten only by ``notebooks/refresh.sh``, which sets
``MHATTN_SAVE_FIGURES=1``. A plain run (a reader's kernel, nbval, the tests) writes nothing,
so running the chapter never changes a tracked file, whatever matplotlib version draws it.
"""

import os
from pathlib import Path

SAVE_VARIABLE = "MHATTN_SAVE_FIGURES"


def save_figure(fig, path, *, bbox_inches=None):
    """Write ``fig`` to ``path`` (PNG, 100 dpi, no timestamp) when refreshing; return whether it wrote.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or pathlib.Path
        Where the PNG goes, e.g. ``FIGURES / "04_attention_heads.png"``.
    bbox_inches : None or "tight", keyword only
        Passed on to ``fig.savefig``: "tight" crops the empty margin.

    Examples
    --------
    >>> import tempfile
    >>> from unittest import mock
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "figure.png"
    ...     with mock.patch.dict(os.environ, {SAVE_VARIABLE: "1"}):  # as notebooks/refresh.sh runs
    ...         print(save_figure(fig, path), path.exists())
    ...     with mock.patch.dict(os.environ, {SAVE_VARIABLE: "0"}):  # any other run writes nothing
    ...         print(save_figure(fig, Path(folder) / "other.png"), (Path(folder) / "other.png").exists())
    True True
    False False
    >>> plt.close(fig)
    """
    if os.environ.get(SAVE_VARIABLE) != "1":
        return False
    fig.savefig(Path(path), dpi=100, metadata={"Software": None}, bbox_inches=bbox_inches)
    return True
