"""The pictures: the chapter's plots, the PCA view of where tokens move, figure files, shown code.

- :mod:`.plots` -- heatmaps and the chapter's figures (matplotlib, from the ``chapter`` extra);
- :mod:`.embedding_shift` -- inputs and outputs in one PCA plane (NumPy only);
- :mod:`.figures` -- saving a figure into ``figures/`` when the notebooks are refreshed;
- :mod:`.source` -- :func:`~.source.show_source`, the package's own code inside a notebook.

Importing this package loads no optional dependency; the plots import matplotlib when first
used, or raise an ImportError that names the extra.
"""
