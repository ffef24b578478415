"""The induction circuit, drawn: which head writes what, which head reads it, through which path.

One picture for notebook 09 (Elhage et al. 2021; Olsson et al. 2022): a layer-0
previous-token head writes each token's predecessor into the residual stream at the next
position; a layer-1 induction head's keys read it (K-composition), so a query of token ``a``
matches the key right after an earlier ``a``; the induction head's values and output (its OV
circuit) copy that key's token into the logits. Nothing here computes: the heads to name come
from the measurements.
"""

from ..checks.optional import require

plt = require("matplotlib.pyplot")
patches = require("matplotlib.patches")

#: the smallest font size of the diagram, in points: 9 CSS px or more on a phone's screen
FONT = 11
COLOURS = {"layer 0": "#fde2c4", "layer 1": "#d4e6f6", "stream": "#eeeeee"}


def _box(ax, x, y, width, height, text, colour, **kwargs):
    """A rounded box centred on ``(x, y)`` with ``text`` in it."""
    ax.add_patch(patches.FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                        boxstyle="round,pad=0.02,rounding_size=0.15", fc=colour, ec="0.3", lw=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=FONT, **kwargs)


def _arrow(ax, start, end, colour="0.2", label=None, label_at=None, style="-|>", **text_kwargs):
    """An arrow from ``start`` to ``end``, with ``label`` at ``label_at``."""
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": style, "color": colour, "lw": 1.6, "shrinkA": 2, "shrinkB": 2})
    if label:
        ax.text(*label_at, label, fontsize=FONT, color=colour, **({"ha": "center", "va": "center"} | text_kwargs))


def plot_induction_circuit(previous_head=3, induction_heads=(0, 1, 2), *, figsize=(5.2, 5.6)):
    """Draw the two-layer induction circuit; returns the ``Figure``.

    Three positions of the residual stream: ``j - 1`` holds token ``a``, ``j`` holds ``b``,
    and a later ``t`` holds ``a`` again. Orange, layer 0: ``previous_head`` moves ``a`` from
    ``j - 1`` into the stream at ``j``. Blue, layer 1: the ``induction_heads``' keys at ``j``
    read that ``a`` (K-composition), the query at ``t`` (token ``a``) matches it, and their
    OV circuit copies ``b`` from ``j`` to the logits at ``t``: the model predicts ``b``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig = plot_induction_circuit(3, [0, 1, 2])
    >>> min(t.get_fontsize() for t in fig.axes[0].texts if t.get_text())  # points: 9 CSS px or more on a phone
    11.0
    >>> plt.close(fig)
    """
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    ax.set(xlim=(0, 10), ylim=(0, 11.2))
    ax.axis("off")
    x_prev, x_key, x_query = 1.4, 4.4, 8.4
    for x, token, name in ((x_prev, "a", "j - 1"), (x_key, "b", "j"), (x_query, "a", "t")):
        ax.plot([x, x], [1.2, 9.7], color="0.75", lw=6, solid_capstyle="round", zorder=0)  # the stream
        ax.text(x, 0.35, f"{token}\nposition {name}", ha="center", va="center", fontsize=FONT + 1,
                fontweight="bold")
    ax.text((x_key + x_query) / 2, 0.45, "...", ha="center", va="center", fontsize=FONT + 2)
    heads = ", ".join(str(h) for h in induction_heads)
    # layer 0: the previous-token head moves a from j - 1 into the stream at j
    _box(ax, (x_prev + x_key) / 2, 2.9, 4.6, 1.25, f"layer 0, head {previous_head}\nprevious-token head",
         COLOURS["layer 0"])
    _arrow(ax, (x_prev, 1.3), (x_prev + 0.7, 2.25))
    _arrow(ax, (x_key - 0.7, 3.55), (x_key, 4.6), label="writes 'a came\nbefore me' at j",
           label_at=(x_prev, 5.0), colour="#b35806")
    # layer 1: keys read it, the query matches, the OV circuit copies b
    _box(ax, (x_key + x_query) / 2, 7.4, 5.6, 1.25, f"layer 1, heads {heads}\ninduction heads", COLOURS["layer 1"])
    _arrow(ax, (x_key, 4.7), (x_key, 6.75), label="key at j reads it\n(K-composition)",
           label_at=(x_prev + 0.2, 6.6), colour="#2166ac")
    _arrow(ax, (x_query, 1.3), (x_query, 6.75), label="query at t:\n'I am a'", label_at=(x_query - 1.2, 3.4),
           colour="#2166ac")
    _arrow(ax, (x_key + 0.25, 5.6), (x_query - 0.25, 5.6), colour="#2166ac", style="<|-|>",
           label="they match:\nt attends to j", label_at=((x_key + x_query) / 2, 4.8))
    _arrow(ax, (x_key, 8.05), (x_query - 1.35, 10.0), label="OV copies b\nfrom j to t", label_at=(x_prev + 0.5, 9.3),
           colour="#2166ac")
    _box(ax, x_query, 10.15, 2.6, 0.9, "predicts b", "white", fontweight="bold")
    ax.text(x_prev, 10.3, "residual\nstream", ha="center", va="center", fontsize=FONT, color="0.4")
    return fig
