"""The multi-head attention explorer, in three parts that can be used apart.

- :mod:`mhattn.explorer.frame`: a pure function from the explorer's state to the numbers of
  one frame (NumPy only). The notebook widget, the Voila app and the book's page in the
  browser all show its numbers.
- :mod:`mhattn.explorer.draw`: the matplotlib figure that draws a frame.
- :mod:`mhattn.explorer.controls`: the ipywidgets controls, :func:`explorer`.

``from mhattn.explorer import explorer`` builds the widget; importing this package alone
loads neither matplotlib nor ipywidgets.
"""

from .frame import Frame, State, compute_frame

__all__ = ["Explorer", "Frame", "State", "compute_frame", "explorer"]


def __getattr__(name):  # the widget needs ipywidgets and matplotlib: import them only when asked
    if name in ("Explorer", "explorer"):
        from . import controls

        return getattr(controls, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
