"""The arguments of the induction circuit's diagram (:mod:`mhattn.pictures.circuit_diagram`).

The heads to name, as ints >= 0 (the diagram labels heads, it looks nothing up), and a figure size.
"""

import numpy as np

from .positions import count


def induction_circuit_args(previous_head, induction_heads, figsize):
    """Arguments of ``plot_induction_circuit``: a head index, a non-empty list of them, ``(width, height)`` > 0."""
    previous_head = count("previous_head", previous_head)
    if isinstance(induction_heads, (str, bytes)) or not hasattr(induction_heads, "__iter__"):
        raise TypeError(f"induction_heads must be a list of head indices, e.g. [0, 1]; got {induction_heads!r}")
    induction_heads = [count("induction_heads", h) for h in induction_heads]
    if not induction_heads:
        raise ValueError("induction_heads must name at least one head; got an empty list")
    try:
        size = np.asarray(figsize, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"figsize must be (width, height) in inches; got {figsize!r}") from None
    if size.shape != (2,) or not np.isfinite(size).all() or (size <= 0).any():
        raise ValueError(f"figsize must be (width, height) in inches, both finite and > 0; got {figsize!r}")
    return {"previous_head": previous_head, "induction_heads": induction_heads,
            "figsize": (float(size[0]), float(size[1]))}, None
