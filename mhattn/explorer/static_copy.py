"""The static copy of the explorer's picture, for the places where no kernel runs.

Displayed as a notebook cell's result, the explorer leaves a static PNG of its picture as a
second output, for GitHub, nbviewer, ``jupyter nbconvert --to html`` and JupyterLab before
the notebook is trusted. Where the live widget renders (JupyterLab, Notebook 8, Voila,
nbconvert's HTML with its widget script), a style sheet inside it hides that copy.
"""

import base64

from ..checks.door import checked
from ..checks.explorer import widget_args

EXPLORER_CLASS = "mhattn-explorer"
#: the style sheet that hides the static copy following a live explorer in the same cell
HIDE_STATIC_COPY = (f"<style>.jp-OutputArea-child:has(.{EXPLORER_CLASS}) + "
                    ".jp-OutputArea-child:has(.jp-RenderedImage) {display: none;}</style>")
STATIC_COPY_TEXT = "(a static copy of the explorer's picture: run the cell for the live explorer)"


class StaticCopy:
    """Mixin for the explorer's widget: display it, then a static PNG of its ``picture``."""

    def _ipython_display_(self):
        """Display the live widget, then a static copy of its picture (see the module docstring)."""
        from IPython.display import display

        widget, static_copy = self.display_outputs()
        display(widget, raw=True)
        display(static_copy, raw=True, metadata=self.static_copy_metadata())

    @checked(widget_args, results_finite=False)
    def display_outputs(self):
        """The two outputs a notebook cell gets: the widget's bundle, then a static PNG of the picture."""
        static_copy = {"image/png": base64.b64encode(self.picture).decode("ascii"), "text/plain": STATIC_COPY_TEXT}
        return [self._repr_mimebundle_(), static_copy]

    @checked(widget_args, results_finite=False)
    def static_copy_metadata(self):
        """The static PNG's smallest text, in its own pixels, as notebooks/refresh.sh records it for figures."""
        return {"mhattn": {"min_font_px": self.drawing.min_font_px(), "dpi": float(self.drawing.figure.dpi)}}
