"""The static plots draw exactly the numbers they are given, labelled, and reject bad input."""

import matplotlib

matplotlib.use("Agg")  # no display needed; must precede pyplot

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

import mhattn  # noqa: E402
from mhattn.pictures import embedding_shift_2d, plot_attention, plot_embedding_shift, plot_heads  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def random_weights(num_heads=3, seq_q=5, seq_k=5, seed=0):
    scores = np.random.default_rng(seed).normal(size=(num_heads, seq_q, seq_k))
    return mhattn.softmax(scores, axis=-1)


def heatmaps(fig):
    """The heatmap Axes of a figure (those that show an image and are not colour bars)."""
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


# plot_heads ---------------------------------------------------------------------------------


def test_plot_heads_draws_every_heads_weights_unchanged_in_order():
    weights = random_weights(num_heads=3, seq_q=4, seq_k=6)  # seq_q != seq_k catches a transpose
    fig = plot_heads(weights)
    axes = heatmaps(fig)
    assert [ax.get_title() for ax in axes] == ["head 0", "head 1", "head 2"]
    for h, ax in enumerate(axes):
        np.testing.assert_array_equal(ax.images[0].get_array(), weights[h])


def test_plot_heads_shares_one_colour_scale_from_0_to_1_and_one_colour_bar():
    weights = random_weights(num_heads=4)
    fig = plot_heads(weights)
    limits = {ax.images[0].get_clim() for ax in heatmaps(fig)}
    assert limits == {(0.0, 1.0)}
    colour_bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(colour_bars) == 1
    assert colour_bars[0].get_ylabel() == "attention weight"


def test_plot_heads_vmax_sets_the_darkest_weight_of_every_panel():
    weights = random_weights()
    assert {ax.images[0].get_clim() for ax in heatmaps(plot_heads(weights, vmax=0.5))} == {(0.0, 0.5)}
    largest = {ax.images[0].get_clim() for ax in heatmaps(plot_heads(weights, vmax=None))}
    assert largest == {(0.0, weights.max())}


def test_plot_heads_labels_axes_and_ticks_with_tokens():
    tokens = ["the", "cat", "sat", "on", "it"]
    fig = plot_heads(random_weights(num_heads=2, seq_q=5, seq_k=5), tokens, title="Two heads")
    assert fig._suptitle.get_text() == "Two heads"
    for ax in heatmaps(fig):
        assert ax.get_xlabel() == "key position"
        assert [t.get_text() for t in ax.get_xticklabels()] == tokens
        assert [t.get_text() for t in ax.get_yticklabels()] == tokens
    assert heatmaps(fig)[0].get_ylabel() == "query position"


def test_plot_heads_writes_each_weight_in_its_cell():
    weights = random_weights(num_heads=2, seq_q=3, seq_k=4)
    fig = plot_heads(weights)
    for h, ax in enumerate(heatmaps(fig)):
        written = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
        assert written == {(i, j): f"{w:.2f}" for (i, j), w in np.ndenumerate(weights[h])}
    assert not any(ax.texts for ax in heatmaps(plot_heads(weights, annotate=False)))


def test_plot_heads_fits_a_book_column_and_grows_downwards_with_the_head_count():
    sizes = {n: plot_heads(random_weights(num_heads=n)).get_size_inches() for n in (1, 2, 3, 4, 6, 8)}
    assert all(width <= 7.5 for width, _ in sizes.values()), "at most a 750 px column at 100 dpi"
    assert sizes[4][1] > sizes[2][1] and sizes[8][1] > sizes[6][1] > sizes[3][1]
    fig = plot_heads(random_weights(num_heads=3))
    panels = heatmaps(fig)
    assert len(panels) == 3 and len({round(ax.get_position().y0, 3) for ax in panels}) == 1, "one row of 3"
    four = heatmaps(plot_heads(random_weights(num_heads=4)))
    assert len({round(ax.get_position().y0, 3) for ax in four}) == 2, "two rows of two"
    np.testing.assert_array_equal(plot_heads(random_weights(), figsize=(9, 3)).get_size_inches(), [9, 3])


def test_plot_heads_accepts_the_module_output_for_one_sequence():
    x = np.random.default_rng(1).normal(size=(2, 5, 8))
    _, weights = mhattn.MultiHeadAttention(8, 2)(x)
    fig = plot_heads(weights[1])
    np.testing.assert_array_equal(heatmaps(fig)[1].images[0].get_array(), weights[1, 1])


@pytest.mark.parametrize(
    ("weights", "tokens", "error", "words"),
    [
        (np.ones((1, 2, 3, 3)) / 3, None, ValueError, ["weights", "(num_heads, seq_q, seq_k)", "weights[0]"]),
        (np.ones((3, 3)) / 3, None, ValueError, ["weights", "3-D", "(3, 3)"]),
        (-random_weights(), None, ValueError, ["weights", "non-negative"]),
        (np.full((2, 3, 3), np.nan), None, ValueError, ["weights", "finite"]),
        (np.ones((2, 3, 3), dtype=bool), None, TypeError, ["weights", "bool"]),
        (random_weights(seq_q=3, seq_k=3), ["a", "b"], ValueError, ["tokens", "3 labels", "got 2"]),
        (random_weights(seq_q=3, seq_k=3), "abc", TypeError, ["tokens", "single string"]),
        (random_weights(seq_q=2, seq_k=3), ["a", "b"], ValueError, ["tokens", "square", "(2, 3)"]),
    ],
)
def test_plot_heads_rejects_bad_input_naming_the_argument(weights, tokens, error, words):
    with pytest.raises(error) as info:
        plot_heads(weights, tokens)
    for word in words:
        assert word in str(info.value)


def test_plot_attention_draws_on_a_given_axes_and_returns_its_image():
    fig, ax = plt.subplots(figsize=(4, 4))
    weights = random_weights()[0]
    image = plot_attention(weights, ax=ax, title="one head")
    assert isinstance(image, AxesImage) and image.axes is ax
    assert ax.get_title() == "one head"
    np.testing.assert_array_equal(image.get_array(), weights)


# plot_embedding_shift -------------------------------------------------------------------------


def shift_example(seq_len=6, d_model=16, seed=3):
    x = np.random.default_rng(seed).normal(size=(1, seq_len, d_model))
    output, _ = mhattn.MultiHeadAttention(d_model, 4)(x)
    return embedding_shift_2d(x[0], output[0])


def arrows(ax):
    return [child for child in ax.get_children() if isinstance(child, Annotation) and child.arrow_patch is not None]


def test_plot_embedding_shift_draws_hollow_inputs_and_filled_outputs_where_given():
    inputs_2d, outputs_2d, explained = shift_example()
    ax = plot_embedding_shift(inputs_2d, outputs_2d, explained)
    hollow, filled = ax.collections
    np.testing.assert_allclose(hollow.get_offsets(), inputs_2d)
    np.testing.assert_allclose(filled.get_offsets(), outputs_2d)
    assert (hollow.get_facecolors()[:, 3] == 0).all(), "input markers must be hollow (transparent face)"
    assert (filled.get_facecolors()[:, 3] == 1).all(), "output markers must be filled"
    # each position's input edge and output face share one colour, different positions differ
    np.testing.assert_array_equal(hollow.get_edgecolors(), filled.get_facecolors())
    assert len({tuple(c) for c in filled.get_facecolors()}) == len(inputs_2d)


def test_plot_embedding_shift_draws_one_arrow_from_each_input_to_its_output():
    inputs_2d, outputs_2d, explained = shift_example()
    ax = plot_embedding_shift(inputs_2d, outputs_2d, explained)
    drawn = arrows(ax)
    assert len(drawn) == len(inputs_2d)
    for arrow, start, end, colour in zip(drawn, inputs_2d, outputs_2d, ax.collections[1].get_facecolors(), strict=True):
        np.testing.assert_allclose(arrow.xyann, start)  # tail
        np.testing.assert_allclose(arrow.xy, end)  # head
        np.testing.assert_allclose(mcolors.to_rgb(arrow.arrow_patch.get_edgecolor()), colour[:3])


def test_plot_embedding_shift_labels_positions_and_reports_explained_variance():
    inputs_2d, outputs_2d, explained = shift_example(seq_len=4)
    ax = plot_embedding_shift(inputs_2d, outputs_2d, np.array([0.257, 0.1449]), labels=list("abcd"))
    texts = [child for child in ax.get_children() if isinstance(child, Annotation) and child.arrow_patch is None]
    assert [t.get_text() for t in texts] == list("abcd")
    np.testing.assert_allclose([t.xy for t in texts], inputs_2d)
    assert ax.get_xlabel() == "principal component 1 (26% of variance)"
    assert ax.get_ylabel() == "principal component 2 (14% of variance)"
    default = plot_embedding_shift(inputs_2d, outputs_2d)
    assert default.get_xlabel() == "principal component 1"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["input", "output"]


def test_plot_embedding_shift_can_label_the_outputs_instead():
    inputs_2d, outputs_2d, _ = shift_example(seq_len=3)
    ax = plot_embedding_shift(inputs_2d, outputs_2d, label_at="outputs")
    texts = [child for child in ax.get_children() if isinstance(child, Annotation) and child.arrow_patch is None]
    assert [t.get_text() for t in texts] == ["pos 0", "pos 1", "pos 2"]
    np.testing.assert_allclose([t.xy for t in texts], outputs_2d)


def test_plot_embedding_shift_draws_on_a_given_axes():
    inputs_2d, outputs_2d, _ = shift_example()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    ax = plot_embedding_shift(inputs_2d, outputs_2d, ax=right, title="right", output_label="after")
    assert ax is right and not left.collections
    assert right.get_title() == "right"
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["input", "after"]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"inputs_2d": np.zeros((4, 3))}, ValueError, ["inputs_2d", "(seq_len, 2)", "(4, 3)"]),
        ({"outputs_2d": np.zeros((5, 2))}, ValueError, ["outputs_2d", "(4, 2)", "(5, 2)"]),
        ({"outputs_2d": np.zeros(8)}, ValueError, ["outputs_2d", "2-D"]),
        ({"inputs_2d": np.full((4, 2), np.inf)}, ValueError, ["inputs_2d", "finite"]),
        ({"explained": np.array([0.3, 0.2, 0.1])}, ValueError, ["explained", "(2,)"]),
        ({"labels": ["a", "b"]}, ValueError, ["labels", "4 labels"]),
        ({"label_at": "input"}, ValueError, ["label_at", "'input'"]),
        ({"inputs_2d": np.array([["a", "b"]] * 4)}, TypeError, ["inputs_2d", "real numbers"]),
    ],
)
def test_plot_embedding_shift_rejects_bad_input_naming_the_argument(kwargs, error, words):
    arguments = {"inputs_2d": np.zeros((4, 2)), "outputs_2d": np.ones((4, 2))} | kwargs
    with pytest.raises(error) as info:
        plot_embedding_shift(**arguments)
    for word in words:
        assert word in str(info.value)


# --- a heatmap's numbers stay readable: each in the colour that contrasts with its cell -------------
# The oracle is the WCAG contrast ratio between the text colour and the colour the cell is
# actually drawn in (``image.cmap(image.norm(value))``), so it follows ``vmax`` as the
# drawing does. Near the crossover both colours read about equally; only cells clearly
# dark (luminance < 0.15) or clearly light (> 0.35) are held to the better colour.


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
