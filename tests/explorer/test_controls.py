"""The explorer widget, driven without a browser: every control of the untrained layer changes
what is drawn, correctly.

What is drawn is compared with an independent computation of the documented recipe
(tests/explorer_expected.py), never with stored numbers. The trained model's controls are in
tests/explorer/test_trained.py, the static copy for places without a kernel in
tests/explorer/test_static_copy.py.
"""

import gc
import io
import itertools
import threading

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from explorer_expected import assert_drawing_matches, drawn, png_pixels, readout_row_sums, tokens_from_the_recipe
from traitlets import TraitError

from mhattn import MultiHeadAttention
from mhattn.explorer import Explorer, State, explorer
from mhattn.explorer.controls import LatestWins
from mhattn.explorer.draw import DPI, FIGSIZE, SCALE, FrameDrawing, png_bytes, split_column
from mhattn.explorer.frame import D_MODELS, MAX_HEADS, MAX_SEQ_LEN, MIN_SEQ_LEN, check_state, head_choices


@pytest.fixture
def ex():
    return explorer(d_model=64, num_heads=4, seq_len=8, seed=123, mask="none")


def test_explorer_is_one_widget_holding_controls_readout_and_picture(ex):
    assert isinstance(ex, ipywidgets.VBox)

    def descendants(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from descendants(child)

    inside = list(descendants(ex))
    for part in (ex.seq_len, ex.d_model, ex.num_heads, ex.seed, ex.mask, ex.readout, *ex.images):
        assert any(part is w for w in inside)
    bundle = ex._repr_mimebundle_()  # what display(ex) sends: a view of this very widget
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.model_id
    pixels = png_pixels(ex.picture)
    assert pixels.shape == (round(FIGSIZE[1] * DPI * SCALE), round(FIGSIZE[0] * DPI * SCALE), 3)


def test_the_two_images_are_the_picture_cut_in_two_and_shown_at_their_css_width(ex):
    heads, pca = (png_pixels(image.value) for image in ex.images)
    np.testing.assert_array_equal(np.hstack([heads, pca]), png_pixels(ex.picture))
    assert heads.shape[1] == split_column() and heads.shape[1] + pca.shape[1] == round(FIGSIZE[0] * DPI * SCALE)
    for image, pixels in zip(ex.images, (heads, pca), strict=True):  # never stretched: SCALE pixels per CSS pixel
        assert image.layout.width == f"{pixels.shape[1] / SCALE:g}px" and image.layout.max_width == "100%"


def pixel_box(artist, renderer):
    box = artist.get_tightbbox(renderer) if hasattr(artist, "get_tightbbox") else artist.get_window_extent(renderer)
    return box.x0, box.x1, box.y0, box.y1


@pytest.mark.parametrize("state", [
    *(State(d_model=48, num_heads=h, seq_len=n, mask=m) for h in (1, 2, 3, 4, 8) for n in (2, 20, MAX_SEQ_LEN)
      for m in ("none", "padding")),
    State(d_model=48, num_heads=6, seq_len=13, mask="causal"),
    *(State(trained=True, tokens=t, layer=layer, positions=p) for layer in (0, 1) for p in ("learned", "none")
      for t in ("a b c d x a b c", "qwertyuiopasdfghjklzxcvbnmqwerty")),
], ids=repr)
def test_every_heatmap_text_lies_left_of_the_cut_and_the_pca_plot_right_of_it(state):
    """A label across SPLIT would be cut in two where the parts stack (a phone)."""
    from mhattn.explorer.frame import compute_frame

    drawing = FrameDrawing()
    drawing.draw(compute_frame(state))
    renderer = drawing.figure.canvas.get_renderer()
    height, width = (round(side * DPI * SCALE) for side in FIGSIZE[::-1])
    heat_side = [*drawing.head_axes, drawing._colorbar_axes, drawing._title]
    pca_side = [drawing.pca_axes, drawing._pca_title, *(t for t in drawing._pca_labels if t.get_visible())]
    for artist in heat_side:
        x0, x1, y0, y1 = pixel_box(artist, renderer)
        assert 0 <= x0 and x1 <= split_column() and 0 <= y0 and y1 <= height, (artist, x0, x1, y0, y1)
    for artist in pca_side:
        x0, x1, y0, y1 = pixel_box(artist, renderer)
        assert split_column() <= x0 and x1 <= width and 0 <= y0 and y1 <= height, (artist, x0, x1, y0, y1)


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (425, 301)])
def test_png_bytes_decodes_to_exactly_its_pixels(shape):
    from PIL import Image

    rgb = np.random.default_rng(sum(shape)).integers(0, 256, (*shape, 3), dtype=np.uint8)
    decoded = Image.open(io.BytesIO(png_bytes(rgb)))
    assert decoded.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(decoded), rgb)
    view = rgb[:, shape[1] // 2:]  # not contiguous
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(view)))), view)


def test_text_form_names_the_current_settings(ex):
    ex.num_heads.value, ex.mask.value = 2, "causal"
    assert repr(ex) == "Explorer(d_model=64, num_heads=2, seq_len=8, seed=123, mask='causal')"
    assert ex._repr_mimebundle_()["text/plain"] == repr(ex)  # what GitHub shows instead of the widget


def test_initial_picture_matches_an_independent_computation(ex):
    assert_drawing_matches(ex)


@pytest.mark.parametrize("seq_len", [MIN_SEQ_LEN, 5, 13, MAX_SEQ_LEN])
def test_seq_len_changes_heatmap_size_and_pca_points(ex, seq_len):
    ex.seq_len.value = seq_len
    heatmaps, inputs_drawn, outputs_drawn = drawn(ex)
    assert heatmaps.shape == (4, seq_len, seq_len)
    assert inputs_drawn.shape == outputs_drawn.shape == (seq_len, 2)
    assert_drawing_matches(ex)


def test_growing_seq_len_keeps_the_earlier_tokens(ex):
    """The tokens come from one fixed 32-token batch, so a longer sequence only adds tokens."""
    short_x = ex.frame.x.copy()
    ex.seq_len.value = 12
    np.testing.assert_array_equal(ex.frame.x[:, :8], short_x)


def test_causal_rows_of_earlier_queries_do_not_change_when_tokens_are_added(ex):
    ex.mask.value = "causal"
    before = drawn(ex)[0]
    ex.seq_len.value = 11
    after = drawn(ex)[0]
    np.testing.assert_allclose(after[:, :8, :8], before, atol=1e-12)  # NaN (masked) cells compare equal


@pytest.mark.parametrize("num_heads", [1, 2, 8])
def test_num_heads_changes_the_number_of_panels(ex, num_heads):
    ex.num_heads.value = num_heads
    assert len(ex.drawing.head_images) == num_heads
    # heatmaps + the PCA panel + the colour bar, and nothing left over from the old layout
    assert sum(ax.get_visible() for ax in ex.drawing.figure.axes) == num_heads + 2
    assert all(ax.get_visible() for ax in ex.drawing.head_axes)
    assert_drawing_matches(ex)


def test_seed_changes_weights_and_pca_points(ex):
    before = drawn(ex)
    ex.seed.value = 7
    after = drawn(ex)
    for old, new in zip(before, after, strict=True):
        assert old.shape == new.shape
        assert not np.allclose(old, new)
    assert_drawing_matches(ex)


def test_causal_mask_greys_out_exactly_the_future_keys(ex):
    ex.mask.value = "causal"
    heatmaps = drawn(ex)[0]
    future = np.triu(np.ones((8, 8), dtype=bool), k=1)
    np.testing.assert_array_equal(np.isnan(heatmaps), np.broadcast_to(future, heatmaps.shape))
    np.testing.assert_allclose(heatmaps[:, 0, 0], 1.0)  # query 0 can only see key 0
    assert_drawing_matches(ex)


@pytest.mark.parametrize("seq_len", [2, 7, 8])
def test_padding_mask_greys_out_the_padding_keys_of_the_shorter_sequence(ex, seq_len):
    ex.seq_len.value = seq_len
    ex.mask.value = "padding"
    heatmaps = drawn(ex)[0]
    real = -(-seq_len // 2)
    assert np.isnan(heatmaps[..., real:]).all() and not np.isnan(heatmaps[..., :real]).any()
    np.testing.assert_allclose(np.nansum(heatmaps, axis=-1), 1.0, atol=1e-12)
    assert f"padding rows: {seq_len - real}" in ex.readout.value
    assert_drawing_matches(ex)


def test_only_the_padding_mask_draws_the_boundary_between_real_and_padding_queries(ex):
    ex.seq_len.value = 9
    for mask in ("padding", "none", "causal", "padding"):
        ex.mask.value = mask
        for ax in ex.drawing.head_axes:
            (line,) = ax.lines
            assert line.get_visible() == (mask == "padding")
            if mask == "padding":
                np.testing.assert_array_equal(line.get_ydata(), [4.5, 4.5])  # queries 0-4 real, 5-8 padding


def test_d_model_offers_only_head_counts_that_divide_it(ex):
    for d_model in D_MODELS:
        ex.d_model.value = d_model
        assert tuple(ex.num_heads.options) == head_choices(d_model)
        assert all(d_model % h == 0 and h <= MAX_HEADS for h in ex.num_heads.options)
        assert ex.num_heads.value in ex.num_heads.options
        assert_drawing_matches(ex)
    assert set(head_choices(12)) == {1, 2, 3, 4, 6} and set(head_choices(16)) == {1, 2, 4, 8}


def test_changing_d_model_keeps_num_heads_when_it_still_divides(ex):
    ex.num_heads.value = 4
    ex.d_model.value = 12
    assert ex.num_heads.value == 4
    ex.num_heads.value = 6
    ex.d_model.value = 16  # 6 does not divide 16: the nearest smaller choice
    assert ex.num_heads.value == 4
    assert_drawing_matches(ex)


def test_changing_d_model_redraws_once(ex):
    renders = ex.renders
    ex.num_heads.value = 8
    ex.d_model.value = 12  # changes num_heads' options and value too
    assert ex.renders == renders + 2


def test_an_impossible_head_count_cannot_be_chosen(ex):
    ex.d_model.value = 12
    picture = ex.picture
    with pytest.raises(TraitError):
        ex.num_heads.value = 8  # 8 does not divide 12
    with pytest.raises(TraitError):
        ex.d_model.value = 100  # not offered
    assert ex.picture == picture
    assert_drawing_matches(ex)


def test_controls_are_bounded(ex):
    ex.seq_len.value = 10**6
    assert ex.seq_len.value == MAX_SEQ_LEN
    ex.seq_len.value = -5
    assert ex.seq_len.value == MIN_SEQ_LEN
    ex.seed.value = 10**30
    assert ex.seed.value == 2**32 - 1
    assert max(D_MODELS) <= 64 and MAX_HEADS <= 8
    assert_drawing_matches(ex)


FIXED_RANGES = [("seq_len", "max", 64), ("seq_len", "min", 1), ("seq_len", "max", 4), ("seed", "max", 10),
                ("seed", "min", 5), ("d_model", "options", (8, 64, 128)), ("num_heads", "options", (3,)),
                ("mask", "options", ("none",)), ("trained_weights", "options", (("trained", True),)),
                ("layer", "options", ((("layer 5", 5)),))]


@pytest.mark.parametrize(("name", "trait", "value"), FIXED_RANGES)
def test_a_control_s_range_or_options_cannot_change(ex, name, trait, value):
    """The picture is made for the ranges the controls offer: changing them is refused, with a message."""
    control = getattr(ex, name)
    before, picture, control_value = getattr(control, trait), ex.picture, control.value
    with pytest.raises(TraitError, match=f"{name} control has a fixed {trait}"):
        setattr(control, trait, value)
    assert getattr(control, trait) == before and control.value == control_value
    assert ex.picture == picture
    assert_drawing_matches(ex)


def test_a_wider_seq_len_range_cannot_leave_controls_and_picture_disagreeing(ex):
    """Issue 9: ``seq_len.max = 64`` then ``value = 40`` drew 32 tokens while the slider said 40."""
    with pytest.raises(TraitError):
        ex.seq_len.max = 64
    ex.seq_len.value = 40
    assert ex.seq_len.value == MAX_SEQ_LEN
    assert drawn(ex)[0].shape == (4, ex.seq_len.value, ex.seq_len.value)
    assert_drawing_matches(ex)


def test_tokens_and_weights_come_from_independent_streams(ex):
    """Issue 9: a token vector equalled a row of W_q / scale (both were RandomState(seed)'s first numbers).

    Independent standard-normal 64-vectors have |cosine| about 1/8; every window of d_model
    consecutive weights, at every offset, is compared with every token vector of the batch.
    """
    ex.seq_len.value = MAX_SEQ_LEN
    d_model = ex.d_model.value
    mha = MultiHeadAttention(d_model, ex.num_heads.value, seed=ex.seed.value)
    np.testing.assert_array_equal(ex.frame.x, tokens_from_the_recipe(ex.seed.value, MAX_SEQ_LEN, d_model))
    tokens = ex.frame.x.reshape(-1, d_model)
    tokens = tokens / np.linalg.norm(tokens, axis=1, keepdims=True)  # (64, d_model)
    for weight in (mha.W_qkv, mha.W_o):
        windows = np.lib.stride_tricks.sliding_window_view(weight.ravel(), d_model)  # (n - d_model + 1, d_model)
        windows = windows / np.linalg.norm(windows, axis=1, keepdims=True)
        assert np.abs(windows @ tokens.T).max() < 0.9
    assert abs(np.corrcoef(ex.frame.x[0].ravel(), ex.frame.x[1].ravel())[0, 1]) < 0.1  # the two sequences, too


def test_readout_shows_the_settings_and_one_row_sum_per_query(ex):
    ex.seq_len.value = 9
    ex.num_heads.value = 2
    text = ex.readout.value
    assert "seq_len=9" in text and "num_heads=2" in text and "d_k=32" in text
    sums = readout_row_sums(text)
    assert len(sums) == 9
    np.testing.assert_allclose(sums, drawn(ex)[0][0].sum(axis=-1), atol=5e-4)


@pytest.mark.parametrize("last", ["seq_len", "num_heads", "d_model", "seed", "mask"])
def test_picture_after_many_changes_equals_a_fresh_explorer(ex, last):
    """Reused artists and the cached background leave nothing stale behind, whatever changed last."""
    steps = {"seq_len": (ex.seq_len, 11), "num_heads": (ex.num_heads, 2), "d_model": (ex.d_model, 32),
             "seed": (ex.seed, 6), "mask": (ex.mask, "padding")}
    ex.num_heads.value, ex.seq_len.value, ex.mask.value, ex.seed.value = 8, 20, "causal", 5  # a different start
    for control, value in [step for name, step in steps.items() if name != last] + [steps[last]]:
        control.value = value
    fresh = explorer(d_model=32, num_heads=2, seq_len=11, seed=6, mask="padding")
    np.testing.assert_array_equal(png_pixels(ex.picture), png_pixels(fresh.picture))
    assert ex.readout.value == fresh.readout.value


def test_every_change_renders_a_new_picture(ex):
    pictures = {ex.picture}
    for control, value in [(ex.seq_len, 9), (ex.num_heads, 2), (ex.d_model, 48), (ex.seed, 1), (ex.mask, "causal")]:
        control.value = value
        assert ex.picture not in pictures, (control.description, value)
        pictures.add(ex.picture)


def live_objects():
    gc.collect()
    return len(gc.get_objects())


def test_a_hundred_updates_do_not_grow_figures_or_objects(ex):
    """Panels are rebuilt on every num_heads change here, the worst case for leftovers."""
    changes = itertools.cycle([(ex.num_heads, 8), (ex.seq_len, 31), (ex.mask, "padding"), (ex.seed, 1),
                               (ex.num_heads, 1), (ex.seq_len, 4), (ex.mask, "causal"), (ex.seed, 2)])

    def update(times):
        for _ in range(times):
            control, value = next(changes)
            control.value = value

    open_figures = plt.get_fignums()
    update(24)  # warm up matplotlib's caches (fonts, text layout)
    objects, renders = live_objects(), ex.renders
    artists = [len(ax.get_children()) for ax in ex.drawing.figure.axes]
    update(104)
    assert ex.renders == renders + 104
    assert plt.get_fignums() == open_figures  # the explorer never registers figures with pyplot
    assert [len(ax.get_children()) for ax in ex.drawing.figure.axes] == artists
    grown = live_objects() - objects
    # A leaked set of heatmap panels is thousands of objects; caches may add a few dozen.
    assert grown < 300, f"{grown} more live Python objects after 104 updates"


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (dict(d_model=100), ValueError, "d_model must be one of"),
        (dict(d_model=12, num_heads=8), ValueError, "num_heads must divide d_model = 12"),
        (dict(num_heads=2.0), TypeError, "num_heads must be a positive int"),
        (dict(seq_len=1), ValueError, "seq_len must be in [2, 32]; got 1"),
        (dict(seq_len=33), ValueError, "seq_len must be in [2, 32]; got 33"),
        (dict(seed=-1), ValueError, "seed must be an int in [0, 2**32 - 1]; got -1"),
        (dict(seed="1"), TypeError, "seed must be an int"),
        (dict(mask="future"), ValueError, "mask must be one of ('none', 'causal', 'padding'); got 'future'"),
        (dict(trained="yes"), TypeError, "trained must be True or False"),
        (dict(tokens=["a", "b"]), TypeError, "tokens must be a str of letters"),
        (dict(tokens="a b 7"), ValueError, "'7'"),
        (dict(tokens="a"), ValueError, "tokens must hold 2 to 32 letters; got 1"),
        (dict(tokens="ab" * 17), ValueError, "tokens must hold 2 to 32 letters; got 34"),
        (dict(layer=2), ValueError, "layer must be an int in [0, 1]; got 2"),
        (dict(layer=1.0), TypeError, "layer must be an int"),
    ],
)
def test_explorer_rejects_settings_its_controls_could_not_show(kwargs, error, words):
    with pytest.raises(error) as info:
        explorer(**kwargs)
    assert words in str(info.value)


def test_redraws_work_on_the_newest_setting_and_drop_those_in_between():
    entered, release, worked = threading.Event(), threading.Event(), []

    def work(item):
        worked.append(item)
        entered.set()
        assert release.wait(10)

    redraws = LatestWins(work, background=True)
    redraws.submit(0)
    assert entered.wait(10)
    for item in range(1, 6):
        redraws.submit(item)  # returns at once, while 0 is still being worked on
    assert worked == [0]
    release.set()
    assert redraws.wait(10)
    assert worked == [0, 5] and (redraws.done, redraws.dropped) == (2, 4)


def test_a_slider_moved_while_a_picture_is_drawn_skips_to_its_last_value():
    """In a kernel the explorer draws in a thread: the settings passed on the way are never drawn."""
    ex = Explorer(check_state(State()), background=True)
    entered, release, draw = threading.Event(), threading.Event(), ex.drawing.draw

    def slow_draw(frame):
        entered.set()
        assert release.wait(10)
        return draw(frame)

    ex.drawing.draw = slow_draw
    renders = ex.renders
    ex.seq_len.value = 9
    assert entered.wait(10)
    for seq_len in range(10, 21):  # the reader keeps moving the slider while 9 is drawn
        ex.seq_len.value = seq_len
    release.set()
    assert ex.redraws.wait(20) and ex.redraws.error is None
    assert ex.renders == renders + 2 and ex.redraws.dropped == 10  # 9, then 20; 10 to 19 never drawn
    fresh = explorer(seq_len=20)
    np.testing.assert_array_equal(png_pixels(ex.picture), png_pixels(fresh.picture))
    assert ex.readout.value == fresh.readout.value and ex.state == fresh.state
