"""Static pictures of attention that the chapter's notebooks share.

Every function takes plain arrays, draws with matplotlib and returns the ``Figure`` or
``Axes`` it drew on, so a notebook can add to the picture or save it. Nothing here
computes attention: the numbers come from the rest of the package.
"""

import numpy as np

from ..checks.optional import require

# matplotlib comes with the chapter's extra (mhattn's core needs NumPy only): without it,
# importing this module raises an ImportError that says `pip install "mhattn[chapter]"`.
plt = require("matplotlib.pyplot")
Line2D = require("matplotlib.lines").Line2D

#: The colour map of every heatmap: light = little weight, dark = much.
WEIGHTS_CMAP = "Blues"


def _numbered(labels, count, prefix=""):
    """``labels``, or ``prefix0, prefix1, ...`` when None."""
    return [f"{prefix}{i}" for i in range(count)] if labels is None else labels


def _steady(points):
    """``points`` rounded to 2**-40 of their largest magnitude.

    The last bits of a float64 depend on which BLAS kernel computed it, and matplotlib's
    anti-aliasing can turn them into different pixels. Rounding far below what a picture can
    show makes the PNG byte-identical on every machine.
    """
    largest = float(np.abs(points).max(initial=0.0))
    if largest == 0.0:
        return points
    quantum = 2.0 ** (np.frexp(largest)[1] - 40)  # a power of two: dividing and multiplying are exact
    return np.round(points / quantum) * quantum


def plot_attention(weights, tokens=None, *, ax=None, title="Attention weights", vmax=1.0, annotate=True):
    """Draw one attention matrix as a heatmap: a row per query, a column per key.

    Parameters
    ----------
    weights : ndarray of shape ``(seq_q, seq_k)``
        ``weights[i, j]`` is how much query ``i`` takes from key ``j``.
    tokens : sequence of str, optional
        Labels of the positions (``seq_q == seq_k``), or None for ``0, 1, ...``.
        For cross-attention (``seq_q != seq_k``) pass None.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new 5 x 4.2 inch figure when None.
    title : str
        The Axes title.
    vmax : float or None, default 1.0
        The weight drawn darkest. The default 1.0 is the largest weight there can be, so
        plots of different weights share one scale; None uses the largest weight shown.
    annotate : bool, default True
        Write each weight in its cell (rounded to two decimals).

    Returns
    -------
    matplotlib.image.AxesImage
        The heatmap; ``image.axes`` is the Axes, ``image.get_array()`` the weights.
        Pass it to ``fig.colorbar`` (:func:`plot_heads` does).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> weights = np.array([[1.0, 0.0], [0.25, 0.75]])  # causal: the first token sees only itself
    >>> image = plot_attention(weights, ["the", "cat"], ax=ax, title="two tokens")
    >>> image.axes.get_title(), image.get_array().shape
    ('two tokens', (2, 2))
    >>> plt.close(fig)
    """
    seq_q, seq_k = weights.shape
    query_labels, key_labels = _numbered(tokens, seq_q), _numbered(tokens, seq_k)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.2), layout="constrained")
    vmax = float(weights.max()) if vmax is None else float(vmax)
    image = ax.imshow(weights, cmap=WEIGHTS_CMAP, vmin=0.0, vmax=vmax)
    ax.set_xticks(range(seq_k), key_labels)
    ax.set_yticks(range(seq_q), query_labels)
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_title(title)
    if annotate:
        for (i, j), value in np.ndenumerate(weights):
            dark = value > 0.6 * vmax
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=10, color="white" if dark else "black")
    return image


def plot_heads(weights, tokens=None, *, title=None, vmax=1.0, annotate=True, figsize=None):
    """Draw every head's attention weights side by side, on one shared colour scale.

    Parameters
    ----------
    weights : ndarray of shape ``(num_heads, seq_q, seq_k)``
        One sequence's weights, e.g. ``weights[0]`` of what
        :meth:`mhattn.MultiHeadAttention.forward` returns.
    tokens : sequence of str, optional
        Labels of the positions, or None for ``0, 1, ...``.
    title : str, optional
        Title above all panels.
    vmax : float or None, default 1.0
        The weight drawn darkest in every panel: by default 1.0, the largest possible
        weight, so the panels (and separate figures) are comparable with each other. None
        uses the largest weight of all heads.
    annotate : bool, default True
        Write each weight in its cell (10 pt: pass False when the cells are too small
        for four characters, from about 12 positions per panel).
    figsize : (float, float), optional
        Default: the width of a book's column, 7.5 inches (4.5 for one head), with the
        panels in rows of at most three (two for two or four heads), each about square.

    Returns
    -------
    matplotlib.figure.Figure
        ``num_heads`` heatmap Axes (titled ``head 0``, ``head 1``, ...) then one colour bar Axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> weights = np.stack([np.eye(3), np.full((3, 3), 1 / 3)])  # (num_heads, seq_q, seq_k)
    >>> fig = plot_heads(weights, ["a", "b", "c"], title="two heads", figsize=(4, 2))
    >>> len(fig.axes), fig.axes[1].get_title()  # two heatmaps, then the colour bar
    (3, 'head 1')
    >>> plt.close(fig)
    """
    num_heads = weights.shape[0]
    columns = {1: 1, 2: 2, 4: 2}.get(num_heads, 3)
    rows = -(-num_heads // columns)
    if figsize is None:
        width = 4.5 if num_heads == 1 else 7.5
        panel = (width - 1.0) / columns  # inches, the colour bar beside
        figsize = (width, rows * (panel + 0.6) + (0.4 if title is not None else 0.0))
    fig, grid = plt.subplots(rows, columns, figsize=figsize, layout="constrained", squeeze=False)
    axes = grid.ravel()
    for ax in axes[num_heads:]:  # a last row with fewer heads
        ax.set_axis_off()
    axes = axes[:num_heads]
    vmax = float(weights.max()) if vmax is None else float(vmax)
    for h, ax in enumerate(axes):
        image = plot_attention(weights[h], tokens, ax=ax, title=f"head {h}", vmax=vmax, annotate=annotate)
        if h % columns:
            ax.set_ylabel("")
        if h < num_heads - columns:  # a head below it shows the keys' label
            ax.set_xlabel("")
    fig.colorbar(image, ax=grid.ravel().tolist(), label="attention weight", fraction=0.03, pad=0.02)
    if title is not None:
        fig.suptitle(title)
    return fig


def plot_embedding_shift(
    inputs_2d,
    outputs_2d,
    explained=None,
    labels=None,
    *,
    ax=None,
    title="How attention moves each position",
    input_label="input",
    output_label="output",
    label_at="inputs",
    centre=None,
    centre_label="centre",
):
    """Draw each position's input and output in 2-D, with an arrow from one to the other.

    Inputs are hollow circles, outputs filled circles in the same colour, and each
    position's label sits next to its input (or its output, see ``label_at``).

    Parameters
    ----------
    inputs_2d : ndarray of shape ``(seq_len, 2)``
        Coordinates of the vectors before, e.g. from :func:`mhattn.pictures.embedding_shift.embedding_shift_2d`.
    outputs_2d : ndarray of shape ``(seq_len, 2)``
        Coordinates of the same positions after, in the same plane.
    explained : ndarray of shape ``(2,)``, optional
        Share of variance each axis keeps; shown in the axis labels.
    labels : sequence of str, optional
        Position labels, or None for ``pos 0``, ``pos 1``, ...
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new 7 x 6 inch figure when None.
    title : str
        The Axes title.
    input_label, output_label : str
        Legend entries for the hollow and the filled circles.
    label_at : {"inputs", "outputs"}, default "inputs"
        Which end of each arrow gets the position's label: choose the end whose points
        are further apart, so the labels do not overlap.
    centre : ndarray of shape ``(2,)``, optional
        A point to mark with a black star (e.g. where complete mixing would send every token).
    centre_label : str
        Its legend entry.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, ax = plt.subplots(figsize=(3, 3))
    >>> inputs_2d = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # (seq_len, 2)
    >>> ax = plot_embedding_shift(inputs_2d, inputs_2d / 2, np.array([0.7, 0.3]), ax=ax, centre=np.zeros(2))
    >>> ax.get_xlabel()
    'principal component 1 (70% of variance)'
    >>> plt.close(fig)
    """
    inputs_2d, outputs_2d = _steady(inputs_2d), _steady(outputs_2d)
    seq_len = inputs_2d.shape[0]
    labels = _numbered(labels, seq_len, "pos ")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 6), layout="constrained")

    colours = plt.get_cmap("tab10")(np.arange(seq_len) % 10)  # (seq_len, 4): one colour per position
    ax.scatter(*inputs_2d.T, s=90, facecolors="none", edgecolors=colours, linewidths=1.8, label=input_label, zorder=3)
    ax.scatter(*outputs_2d.T, s=90, c=colours, edgecolors="black", linewidths=0.6, label=output_label, zorder=3)
    for start, end, colour in zip(inputs_2d, outputs_2d, colours, strict=True):
        ax.annotate(
            "",
            xy=end,
            xytext=start,
            zorder=2,
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.3, "shrinkA": 6, "shrinkB": 6, "alpha": 0.8},
        )
    for (x, y), label in zip(inputs_2d if label_at == "inputs" else outputs_2d, labels, strict=True):
        ax.annotate(label, (x, y), xytext=(7, 7), textcoords="offset points", fontsize=10)

    def axis_label(k):
        share = "" if explained is None else f" ({explained[k]:.0%} of variance)"
        return f"principal component {k + 1}{share}"

    ax.set_xlabel(axis_label(0))
    ax.set_ylabel(axis_label(1))
    ax.set_title(title)
    marker = {"marker": "o", "linestyle": "none", "markersize": 9, "markeredgecolor": "dimgray"}
    handles = [
        Line2D([], [], markerfacecolor="none", markeredgewidth=1.8, label=input_label, **marker),
        Line2D([], [], markerfacecolor="dimgray", label=output_label, **marker),
    ]
    if centre is not None:
        centre = _steady(centre)
        ax.scatter(*centre, marker="*", s=300, color="black", zorder=4)
        handles.append(Line2D([], [], marker="*", linestyle="none", markersize=16, color="black", label=centre_label))
    ax.legend(handles=handles, loc="best")
    ax.grid(alpha=0.3)
    ax.set_aspect("equal", adjustable="datalim")  # equal units: distances in the picture are comparable
    return ax
