"""A heatmap's numbers stay readable: each is written in the colour that contrasts with its cell.

The oracle is the WCAG contrast ratio between the text colour and the colour the cell is
actually drawn in (``image.cmap(image.norm(value))``), so it follows ``vmax`` as the
drawing does. Near the crossover both colours read about equally; only cells clearly
dark (luminance < 0.15) or clearly light (> 0.35) are held to the better colour.
"""

import matplotlib

matplotlib.use("Agg")  # no display needed; must precede pyplot

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mhattn.pictures.plots import plot_attention, plot_heads  # noqa: E402


def luminance(colour):
    """WCAG 2 relative luminance of an sRGB colour."""
    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in mcolors.to_rgb(colour)]
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast(a, b):
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def check_texts(image, weights):
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in image.axes.texts}
    judged = 0
    for (i, j), value in np.ndenumerate(weights):
        cell = image.cmap(image.norm(value))
        cell_luminance = luminance(cell)
        if 0.15 <= cell_luminance <= 0.35:
            continue
        text = texts[(i, j)].get_color()
        other = "black" if mcolors.same_color(text, "white") else "white"
        assert contrast(text, cell) > contrast(other, cell), (value, image.norm.vmax, text)
        judged += 1
    return judged


@pytest.mark.parametrize("vmax", [1.0, 0.5, 0.25, None])
def test_text_contrasts_with_its_cell_for_every_vmax(vmax):
    weights = np.linspace(0.0, 0.5, 20).reshape(4, 5)
    image = plot_attention(weights, vmax=vmax)
    assert check_texts(image, weights) >= 10
    plt.close("all")


def test_plot_heads_shares_the_scale_and_the_text_follows_it():
    weights = np.stack([np.linspace(0.0, 0.3, 9).reshape(3, 3), np.linspace(0.0, 0.1, 9).reshape(3, 3)])
    fig = plot_heads(weights, vmax=None)  # the largest weight of all heads, 0.3, is drawn darkest
    heads = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    for ax, head in zip(heads, weights, strict=True):
        check_texts(ax.images[0], head)
    plt.close("all")


def test_vmax_none_draws_the_largest_weight_shown_darkest():
    weights = np.linspace(0.0, 0.3, 12).reshape(3, 4)
    image = plot_attention(weights, vmax=None)
    assert image.norm.vmin == 0.0 and image.norm.vmax == pytest.approx(0.3, rel=1e-15)
    fig = plot_heads(np.stack([weights, weights / 3]), vmax=None)  # one scale: the largest weight of all heads
    heads = [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]
    assert [ax.images[0].norm.vmax for ax in heads] == pytest.approx([0.3, 0.3], rel=1e-15)
    plt.close("all")
