"""The explorer's picture: one matplotlib figure that draws a :class:`~mhattn.explorer.frame.Frame`.

Left, one heatmap of attention weights per head (grey: masked cells); right, every token
before and after the layer in one PCA plane, with an arrow from each input to its output.

:class:`FrameDrawing` keeps one :class:`~matplotlib.figure.Figure` for its whole life (never
registered with pyplot, so nothing accumulates in ``plt``). Drawing a new frame updates the
artists in place; a new ``num_heads`` shows, hides and moves heatmap panels made once,
``MAX_HEADS`` of them.

Where things go (the figure's size, its fonts, the heatmap grid, the cut at ``SPLIT``) is
:mod:`mhattn.explorer.layout`; :meth:`FrameDrawing.draw` returns the picture as two PNGs
(:func:`~mhattn.explorer.png.png_bytes`), the heatmaps and the PCA plot.
"""

from collections import OrderedDict

import numpy as np

from ..checks.door import checked
from ..checks.explorer import MAX_HEADS, MAX_SEQ_LEN, draw_args
from ..checks.optional import require
from .frame import SHOWN, padded_length
from .layout import (  # noqa: F401 (the picture's sizes, shown here too)
    DPI,
    FIGSIZE,
    FONT,
    INPUT_COLOR,
    PAD_COLOR,
    PCA_BOX,
    SCALE,
    SMALL,
    SPLIT,
    grid,
    panel_layout,
    part_widths,
    split_column,
)
from .png import png_bytes

BACKGROUNDS = 8  # static backgrounds kept, the most recently shown (5.1 MB each)


def colormap():
    """The heatmaps' colours: matplotlib's "Blues", masked cells (weight exactly 0) grey."""
    return require("matplotlib").colormaps["Blues"].with_extremes(bad="#c8c8c8")


class FrameDrawing:
    """The explorer's figure; :meth:`draw` shows a frame and returns the picture as two PNGs.

    Attributes
    ----------
    figure : matplotlib.figure.Figure
    head_axes, head_images : lists, one per head shown
        The heatmap axes and their ``AxesImage`` (``get_array()`` is what is drawn, masked
        cells masked).
    pca_axes, pca_inputs, pca_outputs, pca_arrows
        The embedding-shift panel: hollow input circles, filled output circles and arrows.
    renders : int
        How many frames have been drawn.
    """

    def __init__(self):
        require("matplotlib")
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize
        from matplotlib.figure import Figure

        self.figure = Figure(figsize=FIGSIZE, dpi=DPI * SCALE)
        self._canvas = FigureCanvasAgg(self.figure)
        self._cmap = colormap()
        self._build_pca_panel()
        self._build_head_panels()
        self.head_axes, self.head_images, self._head_count = [], [], 0
        self._backgrounds, self._background_layout = OrderedDict(), None  # layout -> bitmap
        # The colour bar belongs to no heatmap: one 0..1 scale shared by whichever heads are shown.
        self._colorbar_axes = self.figure.add_axes(panel_layout(1)[1])
        bar = self.figure.colorbar(ScalarMappable(Normalize(0.0, 1.0), self._cmap), cax=self._colorbar_axes)
        bar.set_label("attention weight", fontsize=SMALL)
        bar.ax.tick_params(labelsize=SMALL)
        self._title = self.figure.text(0.5 * SPLIT, 0.985, "", ha="center", va="bottom",
                                       fontsize=FONT, linespacing=1.3)
        self.renders = 0

    @checked(draw_args)
    def draw(self, frame):
        """Show ``frame``; return ``(heatmaps, pca)``, the figure's two parts as PNG bytes (see ``SPLIT``)."""
        state, weights, num_heads, seq_len = frame.state, frame.weights, frame.num_heads, frame.seq_len
        if num_heads != self._head_count:
            self._layout_head_panels(num_heads)
        shown = (tuple(frame.labels), state.layer, state.position_mode) if state.trained else state.mask
        layout = (num_heads, seq_len, state.trained, shown)  # what the static background shows
        if layout != self._background_layout:
            self._update_background(frame)
        extent = (-0.5, seq_len - 0.5, seq_len - 0.5, -0.5)
        for image, w in zip(self.head_images, weights, strict=True):
            image.set_data(np.ma.masked_array(w, mask=~frame.allowed))  # masked cells are drawn grey
            image.set_extent(extent)
        self._update_pca_panel(frame)
        self.renders += 1
        self._render(layout)
        rgb, column = self._pixels(), split_column()
        return png_bytes(rgb[:, :column]), png_bytes(rgb[:, column:])

    def png(self):
        """The whole figure, as last drawn, as PNG bytes."""
        return png_bytes(self._pixels())

    def _pixels(self):
        return np.asarray(self._canvas.buffer_rgba())[..., :3]  # (height, width, 3) uint8, a view

    def min_font_px(self):
        """The smallest visible, non-empty text of the picture, in pixels of its PNG (``SCALE`` per CSS pixel)."""
        from matplotlib.text import Text

        sizes = [t.get_fontsize() for t in self.figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
        return round(min(sizes) * self.figure.dpi / 72, 2)

    def _render(self, layout):
        """Draw the figure on its canvas.

        Everything that changes on every frame (heatmaps, points, arrows, labels) is an
        *animated* artist, left out of ``canvas.draw()``. The rest -- frames, ticks, titles,
        the colour bar -- is drawn once per ``layout`` and kept as a bitmap; a new frame copies
        that bitmap back and draws only the animated artists on top (matplotlib's blitting).
        The last ``BACKGROUNDS`` layouts keep their bitmaps, so a slider moved back and forth
        draws each static part once.
        """
        if layout != self._background_layout:
            background = self._backgrounds.pop(layout, None)
            if background is None:
                self._canvas.draw()  # the static parts only
                background = self._canvas.copy_from_bbox(self.figure.bbox)
            self._backgrounds[layout] = background  # the most recent last
            while len(self._backgrounds) > BACKGROUNDS:
                self._backgrounds.popitem(last=False)
            self._background_layout = layout
        self._canvas.restore_region(self._backgrounds[layout])
        for artist in self._animated():
            self.figure.draw_artist(artist)

    def _animated(self):
        """The artists redrawn for every frame, in drawing order."""
        boundaries = [ax.lines[0] for ax in self.head_axes if ax.lines[0].get_visible()]  # over the heatmaps
        return [*self.head_images, *boundaries, self.pca_arrows, self.pca_inputs, self.pca_outputs, self._pca_title,
                *(label for label in self._pca_labels if label.get_visible())]

    def _build_head_panels(self):
        """Make ``MAX_HEADS`` heatmap panels once, hidden; :meth:`_layout_head_panels` shows some."""
        self._panel_pool = []
        for h in range(MAX_HEADS):
            ax = self.figure.add_axes((0, 0, 0.1, 0.1), visible=False)
            image = ax.imshow(np.zeros((2, 2)), cmap=self._cmap, vmin=0.0, vmax=1.0, interpolation="nearest",
                              animated=True)
            ax.set_title(f"head {h}", fontsize=FONT, pad=2)
            ax.tick_params(labelsize=SMALL, length=2, pad=1.5)
            # With the padding mask, a dashed line separates the real queries from the padding ones.
            ax.axhline(0, color="#333333", linewidth=1.0, linestyle=(0, (3, 2)), visible=False, animated=True)
            self._panel_pool.append((ax, image))

    def _layout_head_panels(self, num_heads):
        """Show the first ``num_heads`` panels, packed in a grid; hide the rest (moving beats creating)."""
        rows, cols = grid(num_heads)
        panels, colorbar = panel_layout(num_heads)
        for h, (ax, _) in enumerate(self._panel_pool):
            ax.set_visible(h < num_heads)
            if h < num_heads:
                ax.set_position(panels[h])
                ax.set_ylabel("query" if h % cols == 0 else "", fontsize=FONT, labelpad=1)
                ax.set_xlabel("key" if h + cols >= num_heads else "", fontsize=FONT, labelpad=1)  # bottom row
        self.head_axes = [ax for ax, _ in self._panel_pool[:num_heads]]
        self.head_images = [image for _, image in self._panel_pool[:num_heads]]
        self._colorbar_axes.set_position(colorbar)
        grid_top = panels[0][1] + panels[0][3]
        self._title.set_position((self._title.get_position()[0], grid_top + 0.28 / FIGSIZE[1]))  # above "head 0"
        self._head_count = num_heads
        self._background_layout = None

    def _build_pca_panel(self):
        ax = self.pca_axes = self.figure.add_axes((PCA_BOX[0], PCA_BOX[1], PCA_BOX[2] - PCA_BOX[0],
                                                   PCA_BOX[3] - PCA_BOX[1]))
        ax.set_xticks([])  # principal-component coordinates have no meaning of their own
        ax.set_yticks([])
        ax.set_xlabel("principal component 1", fontsize=FONT, labelpad=2)
        ax.set_ylabel("principal component 2", fontsize=FONT, labelpad=2)
        empty = np.zeros((0, 2))
        self.pca_inputs = ax.scatter(empty[:, 0], empty[:, 1], s=36, facecolors="white", edgecolors=INPUT_COLOR,
                                     linewidths=1.2, zorder=3, animated=True, label="input")
        self.pca_outputs = ax.scatter(empty[:, 0], empty[:, 1], s=26, color=INPUT_COLOR, zorder=4, animated=True,
                                      label="output")
        self.pca_arrows = None
        self._pca_labels = [ax.text(0, 0, str(i), fontsize=SMALL, ha="center", va="center", visible=False,
                                    animated=True, zorder=5) for i in range(MAX_SEQ_LEN)]
        self._pca_title = ax.text(1.0, 1.02, "", transform=ax.transAxes, ha="right", va="bottom", fontsize=FONT,
                                  animated=True)
        ax.legend(loc="upper left", fontsize=SMALL, framealpha=0.85, handletextpad=0.3, borderpad=0.3)

    def _update_pca_panel(self, frame):
        ax, start, end, seq_len = self.pca_axes, frame.inputs_2d, frame.outputs_2d, frame.seq_len  # (seq_len, 2)
        colors = np.where(frame.real, INPUT_COLOR, PAD_COLOR)
        self.pca_inputs.set_offsets(start)
        self.pca_inputs.set_edgecolors(colors)
        self.pca_outputs.set_offsets(end)
        self.pca_outputs.set_facecolors(colors)
        if self.pca_arrows is not None:
            self.pca_arrows.remove()  # a Quiver cannot change its number of arrows: make a new one
        delta = end - start
        self.pca_arrows = ax.quiver(start[:, 0], start[:, 1], delta[:, 0], delta[:, 1], color=colors,
                                    angles="xy", scale_units="xy", scale=1, width=0.006, headwidth=4.5,
                                    headlength=6, headaxislength=5.5, alpha=0.8, zorder=2, animated=True)
        points = np.vstack([start, end])  # (2 * seq_len, 2)
        low, high = points.min(axis=0), points.max(axis=0)
        margin = 0.08 * (high - low).max() + 1e-9
        ax.set_xlim(low[0] - margin, high[0] + margin)
        ax.set_ylim(low[1] - margin, high[1] + 3 * margin)  # room for the legend
        every = 1 if seq_len <= 16 else 4  # beyond 16 tokens the labels would overlap: label every 4th
        for i, label in enumerate(self._pca_labels):  # the position number (or letter), just past each output
            label.set_visible(i < seq_len and i % every == 0)
            if i < seq_len:
                direction = delta[i] / (np.linalg.norm(delta[i]) + 1e-12)
                label.set_position(end[i] + 0.55 * margin * direction)
                label.set_color(colors[i])
                label.set_text(frame.labels[i])
        what = f"layer {frame.state.layer} moved each token" if frame.state.trained else "the layer moved each token"
        self._pca_title.set_text(f"where {what}\n(PCA: {100 * frame.explained.sum():.0f}% of the "
                                 "variance)")

    def _update_background(self, frame):
        """Ticks and titles: the parts that change only with num_heads, seq_len, the mask or the tokens."""
        from matplotlib.ticker import MaxNLocator

        state, seq_len = frame.state, frame.seq_len
        if state.trained and seq_len <= 16:
            ticks = np.arange(seq_len)
        else:
            bins = 3 if len(self.head_axes) > 4 else 4  # narrower panels: fewer ticks, or "10" meets "15"
            ticks = MaxNLocator(nbins=bins, integer=True, min_n_ticks=2).tick_values(0, seq_len - 1)
            ticks = ticks[(ticks >= 0) & (ticks <= seq_len - 1)].astype(int)
        labels = [frame.labels[t] for t in ticks]
        limits = (-0.5, seq_len - 0.5)
        padding = not state.trained and state.mask == "padding"
        for ax in self.head_axes:
            (line,) = ax.lines  # the padding boundary
            line.set_visible(padding)
            line.set_ydata([padded_length(seq_len) - 0.5] * 2)
            ax.set_xlim(limits)
            ax.set_ylim(limits[::-1])  # query 0 at the top, like a matrix
            for axis in (ax.xaxis, ax.yaxis):  # ticks only on the outer panels
                outer = bool(axis.get_label_text())
                axis.set_ticks(ticks if outer else [], labels=labels if outer else [])
        if state.trained:
            where = "no positions" if state.position_mode == "none" else "learned positions"
            self._title.set_text(f"attention weights, layer {state.layer} of the trained model\n({where})  ·  "
                                 "row = query, column = key\ngrey = masked (causal)")
            return
        grey = {"none": "", "causal": "\ngrey = masked", "padding": "\ngrey = masked padding"}
        rope = "RoPE, " if state.position_mode == "rope" else ""
        self._title.set_text(f"attention weights, sequence {SHOWN + 1} of a batch of 2\n({rope}untrained)  ·  "
                             f"row = query, column = key{grey[state.mask]}")
