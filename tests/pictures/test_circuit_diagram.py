"""The induction circuit's diagram: readable on a phone, naming the heads it is given, nothing cut off.

A figure of width ``w`` inches at the book's 100 dpi is ``100 w`` pixels wide; a phone shows it
in about 350 CSS pixels, so text of ``s`` points is ``s * 100 / 72 * 350 / (100 w)`` pixels
high there. The diagram must keep that at 9 pixels or more.
"""

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mhattn.pictures import plot_induction_circuit  # noqa: E402

PHONE_COLUMN_PX = 350


@pytest.fixture
def figure():
    fig = plot_induction_circuit(3, [0, 1, 2])
    yield fig
    plt.close(fig)


def test_every_text_is_at_least_9_css_pixels_on_a_phone(figure):
    width_in = figure.get_size_inches()[0]
    scale = min(1.0, PHONE_COLUMN_PX / (100 * width_in))
    texts = [t for t in figure.findobj(matplotlib.text.Text) if t.get_text().strip()]
    assert texts
    assert min(t.get_fontsize() for t in texts) * 100 / 72 * scale >= 9


def test_it_names_the_heads_and_the_paths_it_draws(figure):
    words = " ".join(t.get_text() for t in figure.axes[0].texts)
    for part in ("layer 0, head 3", "previous-token head", "layer 1, heads 0, 1, 2", "induction heads",
                 "K-composition", "OV copies b", "predicts b"):
        assert part in words


def test_no_text_leaves_the_figure(figure):
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for text in figure.axes[0].texts:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


@pytest.mark.parametrize(("arguments", "named"), [
    ({"previous_head": -1}, "previous_head"), ({"induction_heads": []}, "induction_heads"),
    ({"induction_heads": "012"}, "induction_heads"), ({"figsize": (0, 3)}, "figsize"),
])
def test_the_door_refuses_bad_heads_and_sizes_by_name(arguments, named):
    with pytest.raises((TypeError, ValueError), match=named):
        plot_induction_circuit(**{"previous_head": 3, "induction_heads": [0, 1, 2]} | arguments)
