"""The multi-head attention explorer: state -> numbers -> drawing -> controls, each usable apart.

- :mod:`.frame`: a pure function from the explorer's state to the numbers of one frame
  (NumPy only). The notebook widget, the Voila app and the book's page in the browser all
  show its numbers.
- :mod:`.layout`, :mod:`.png` and :mod:`.draw`: the matplotlib figure that draws a frame.
- :mod:`.launch` (:func:`explorer`) and :mod:`.controls` (with :mod:`.fixed`, :mod:`.background`,
  :mod:`.static_copy` and :mod:`.text`): the ipywidgets widget.

This surface checks every call (the checks: :mod:`mhattn.checks.explorer`); the modules hold
the plain code. ``from mhattn.explorer import explorer`` builds the widget; importing this
package alone loads neither matplotlib nor ipywidgets. The explorer uses the teaching path,
the learning code and the pictures; nothing below it imports it.
"""

from ..checks import explorer as checks
from ..checks.door import door
from . import frame
from .frame import Frame, State

__all__ = ["Explorer", "Frame", "State", "compute_frame", "explorer"]

compute_frame = door(frame.compute_frame, checks.compute_frame_args)


def __getattr__(name):  # the widget needs ipywidgets and matplotlib: import them only when asked
    if name in ("Explorer", "explorer"):
        from . import controls, launch

        globals().update(Explorer=controls.Explorer, explorer=door(launch.explorer, checks.explorer_args))
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
