"""The pictures: the chapter's plots, the PCA view of where tokens move, figure files, shown code.

- :mod:`.plots` -- heatmaps and the chapter's figures (matplotlib, from the ``chapter`` extra);
- :mod:`.circuit_diagram` -- the induction circuit, drawn (matplotlib too);
- :mod:`.embedding_shift` -- inputs and outputs in one PCA plane (NumPy only);
- :mod:`.figures` -- saving a figure into ``figures/`` when the notebooks are refreshed;
- :mod:`.source` -- :func:`show_source`, the package's own code inside a notebook;
- :mod:`.exercises` -- what every exercise checker of the chapter shares.

This surface checks every call (the checks: :mod:`mhattn.checks.pictures`); the modules hold
the plain code. Importing this package loads no optional dependency; the plots import
matplotlib when first asked for, or raise an ImportError that names the extra. The pictures
use the teaching path and the engine; the explorer uses them.
"""

from ..checks import pictures as checks
from ..checks.circuits_diagram import induction_circuit_args
from ..checks.door import door
from . import embedding_shift, exercises, figures, source
from .exercises import NotYet

__all__ = [
    "NotYet",
    "embedding_shift_2d",
    "exercise",
    "not_yet",
    "plot_attention",
    "plot_embedding_shift",
    "plot_heads",
    "plot_induction_circuit",
    "save_figure",
    "show_source",
]

embedding_shift_2d = door(embedding_shift.embedding_shift_2d, checks.embedding_shift_args)
exercise = door(exercises.exercise, checks.exercise_args, results_finite=False)
not_yet = door(exercises.not_yet, checks.any_value_args, results_finite=False)
save_figure = door(figures.save_figure, checks.save_figure_args, results_finite=False)
show_source = door(source.show_source, checks.show_source_args, results_finite=False)

_PLOTS = {"plot_attention": checks.plot_attention_args, "plot_heads": checks.plot_heads_args,
          "plot_embedding_shift": checks.plot_embedding_shift_args}
_DIAGRAMS = {"plot_induction_circuit": induction_circuit_args}


def __getattr__(name):  # the plots need matplotlib: import it only when one is asked for
    if name in _PLOTS:
        from . import plots

        globals().update({plot: door(getattr(plots, plot), check, results_finite=False)
                          for plot, check in _PLOTS.items()})
        return globals()[name]
    if name in _DIAGRAMS:
        from . import circuit_diagram

        globals().update({diagram: door(getattr(circuit_diagram, diagram), check, results_finite=False)
                          for diagram, check in _DIAGRAMS.items()})
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
