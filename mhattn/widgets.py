"""The explorer widget, kept under its first name: see :mod:`mhattn.explorer`.

``from mhattn.widgets import explorer`` still works; new code imports from
:mod:`mhattn.explorer` (the frame, the drawing and the controls live there).
"""

from .explorer.controls import STATIC_COPY_TEXT, WEIGHTS, Explorer, explorer
from .explorer.draw import DPI, FIGSIZE
from .explorer.frame import (
    D_MODELS,
    DEFAULT_TOKENS,
    MASKS,
    MAX_HEADS,
    MAX_SEED,
    MAX_SEQ_LEN,
    MIN_SEQ_LEN,
    SHOWN,
    TRAINED_LAYERS,
    head_choices,
    padded_length,
    random_tokens,
)

__all__ = ["D_MODELS", "DEFAULT_TOKENS", "DPI", "FIGSIZE", "MASKS", "MAX_HEADS", "MAX_SEED", "MAX_SEQ_LEN",
           "MIN_SEQ_LEN", "SHOWN", "STATIC_COPY_TEXT", "TRAINED_LAYERS", "WEIGHTS", "Explorer", "explorer",
           "head_choices", "padded_length", "random_tokens"]
