"""Where the explorer's picture puts things: its size, its fonts, the heatmap grid, the cut into two PNGs.

The figure is laid out for a page's text column, 750 CSS pixels wide with no text smaller
than 9 points (12.5 CSS pixels), and rendered at ``SCALE`` bitmap pixels per CSS pixel, so it
stays sharp on high-density screens. It is cut at ``SPLIT`` into two PNGs, the heatmaps (450
CSS pixels wide) and the PCA plot (300): side by side on a wide page, one above the other on a
phone, where a 360-pixel column still shows 10-pixel text. Plain arithmetic: no matplotlib.
"""

import math

FIGSIZE = (7.5, 4.25)  # inches, the same for every setting: 750 x 425 CSS pixels at DPI (exact in binary:
# every matplotlib rounds 7.5 * 100 and 4.25 * 100 the same way, where 4.1 * 100 = 409.999... did not)
DPI = 100  # CSS pixels per inch where the picture is shown
SCALE = 2  # bitmap pixels per CSS pixel (a "2x" picture)
SPLIT = 0.6  # figure fraction where the heatmaps' part ends and the PCA plot's begins (450 CSS pixels)
FONT, SMALL = 10, 9  # points: titles and labels, ticks
_HEADS_BOX = (0.01, 0.09, 0.5, 0.77)  # left, bottom, right, top of the heatmap area (figure fraction)
PCA_BOX = (0.68, 0.06, 0.988, 0.8)  # right edge on a whole pixel (741)
INPUT_COLOR, PAD_COLOR = "#1f4e99", "#a0a0a0"


def grid(num_heads):
    """(rows, columns) of heatmap panels: one row up to three heads, two rows after that."""
    rows = 1 if num_heads <= 3 else 2
    return rows, math.ceil(num_heads / rows)


def panel_layout(num_heads):
    """Where the heatmaps and the colour bar go: equal squares packed in a grid, in figure fractions.

    Returns ``(panels, colorbar)``: one ``(left, bottom, width, height)`` per head, then the
    colour bar's, as tall as the grid and just right of it.
    """
    rows, cols = grid(num_heads)
    fig_w, fig_h = FIGSIZE
    left, bottom, right, top = (_HEADS_BOX[0] * fig_w, _HEADS_BOX[1] * fig_h,  # inches from here on
                                _HEADS_BOX[2] * fig_w, _HEADS_BOX[3] * fig_h)
    label_x, label_y, title, gap = 0.45, 0.4, 0.22, 0.12  # room for tick labels, axis labels, "head h"
    side = min((right - left - label_x - (cols - 1) * gap) / cols,
               (top - bottom - label_y - rows * title - (rows - 1) * gap) / rows, 2.4)
    grid_w = cols * side + (cols - 1) * gap
    grid_h = rows * (side + title) + (rows - 1) * gap
    x0 = left + label_x + 0.5 * (right - left - label_x - grid_w)  # centred in the heatmap area
    y_top = top - 0.5 * (top - bottom - label_y - grid_h)
    panels = []
    for h in range(num_heads):
        row, col = divmod(h, cols)
        x = x0 + col * (side + gap)
        y = y_top - title - row * (side + title + gap) - side
        panels.append((x / fig_w, y / fig_h, side / fig_w, side / fig_h))
    colorbar = ((x0 + grid_w + 0.15) / fig_w, (y_top - grid_h) / fig_h, 0.1 / fig_w, (grid_h - title) / fig_h)
    return panels, colorbar


def split_column():
    """The bitmap column where the heatmaps' PNG ends and the PCA plot's begins."""
    return round(SPLIT * FIGSIZE[0] * DPI * SCALE)


def part_widths():
    """``(heatmaps, pca)``: the CSS widths, in pixels, at which the two PNGs of :meth:`FrameDrawing.draw` show."""
    total = round(FIGSIZE[0] * DPI * SCALE)
    return split_column() / SCALE, (total - split_column()) / SCALE
