"""An interactive explorer: change the settings, watch every head's attention change.

:func:`explorer` returns one ipywidgets widget. Its ``weights`` switch chooses what it runs:

- **untrained**: one freshly initialised :class:`~mhattn.MultiHeadAttention` layer on a batch of
  two sequences of random token vectors. Controls: ``seq_len``, ``d_model``, ``num_heads``,
  the mask and the random seed.
- **trained (induction)**: the chapter's trained two-layer, attention-only model
  (:mod:`mhattn.model`, notebook 09) reading letters typed into the ``tokens`` box
  (``a`` is token 0, ``b`` token 1, ...). Controls: the tokens and the layer shown.

Only the controls of the current choice are shown. Below them: a readout, and a picture
with one heatmap of attention weights per head next to a 2-D view of where the layer moved
each token.

The picture is a single matplotlib :class:`~matplotlib.figure.Figure` kept for the widget's
whole life (never registered with pyplot, so nothing accumulates in ``plt``). A change of
setting updates its artists in place (new image data, new point offsets); a new ``num_heads``
shows, hides and moves heatmap panels that were made once, ``MAX_HEADS`` of them. The figure
is rendered to PNG bytes and shown in an :class:`ipywidgets.Image`, which works the same in
JupyterLab, Voila and a test without any frontend.

What is drawn, so that it can be recomputed independently::

    # untrained: the tokens and the weights come from two independent random streams
    x = np.stack([np.random.default_rng([seed, b + 1]).standard_normal((seq_len, d_model))
                  for b in (0, 1)])                        # (2, seq_len, d_model)
    output, weights = MultiHeadAttention(d_model, num_heads, seed=seed)(x, mask)
    # shown: sequence 1 (the second of the batch): weights[1] and embedding_shift_2d(x[1], output[1])

    # trained: the model's residual stream, layer by layer, up to the layer shown
    model, tokens = load_trained(), encode_letters(text)
    h = model.embed[tokens] + model.pos[:seq_len]           # (seq_len, d_model)
    for mha in model.layers[:layer + 1]:
        output, weights = mha(h[None], causal_mask(seq_len))
        h_before, h = h, h + output[0]
    # shown: weights[0] and embedding_shift_2d(h_before, h)

Each sequence of random tokens is drawn from its own stream, one token after the other, so
moving the ``seq_len`` slider adds or removes tokens at the end and leaves the others as
they were. For ``mask="padding"`` the second sequence keeps its first
``padded_length(seq_len)`` tokens and the rest are padding.

The controls' ranges and options are fixed: the picture can show every value they offer,
and setting a new ``min``, ``max`` or ``options`` raises :class:`traitlets.TraitError`.

Displayed as a notebook cell's result, the explorer also leaves a static PNG of its picture
as a second output, for the places where no kernel runs (GitHub, nbviewer, ``jupyter
nbconvert --to html``, JupyterLab before the notebook is trusted). Where the live widget
renders, a style sheet inside it hides that copy.
"""

import html
import io
import math

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image as PILImage
from threadpoolctl import ThreadpoolController
from traitlets import TraitError, validate

from . import _checks
from .embedding_shift import embedding_shift_2d
from .masks import causal_mask, padding_mask
from .multihead import MultiHeadAttention

MIN_SEQ_LEN, MAX_SEQ_LEN = 2, 32
D_MODELS = (12, 16, 32, 48, 64)
MAX_HEADS = 8  # more panels than this would be too small to read
MASKS = ("none", "causal", "padding")
MAX_SEED = 2**32 - 1  # the largest seed np.random.RandomState accepts
SHOWN = 1  # untrained, the explorer draws sequence 1 of the batch of two (the one padding shortens)
WEIGHTS = (("untrained", False), ("trained (induction)", True))  # (label, value of ``trained_weights``)
DEFAULT_TOKENS = "a b c d x a b c"
TRAINED_LAYERS = 2  # layers of the shipped trained model (mhattn/data/induction.npz)

FIGSIZE = (10.0, 4.75)  # inches, the same for every setting: 960 x 456 pixels at DPI
DPI = 96
_HEADS_BOX = (0.045, 0.09, 0.565, 0.86)  # left, bottom, right, top of the heatmap area (figure fraction)
_PCA_BOX = (0.685, 0.1, 0.985, 0.84)
_CMAP = matplotlib.colormaps["Blues"].with_extremes(bad="#c8c8c8")  # masked cells (weight exactly 0) are grey
_INPUT_COLOR, _PAD_COLOR = "#1f4e99", "#a0a0a0"
_EXPLORER_CLASS = "mhattn-explorer"
# Where the live widget renders (JupyterLab, Notebook 7, Voila, nbconvert's HTML with its
# widget script), it hides the static copy of its picture that follows it in the same cell.
_HIDE_STATIC_COPY = (f"<style>.jp-OutputArea-child:has(.{_EXPLORER_CLASS}) + "
                     ".jp-OutputArea-child:has(.jp-RenderedImage) {display: none;}</style>")
STATIC_COPY_TEXT = "(a static copy of the explorer's picture: run the cell for the live explorer)"


def head_choices(d_model):
    """The head counts the explorer offers for ``d_model``: divisors of it, at most ``MAX_HEADS``."""
    return tuple(h for h in range(1, MAX_HEADS + 1) if d_model % h == 0)


def padded_length(seq_len):
    """Real tokens in the padded sequence: the first half (rounded up); the rest is padding."""
    return seq_len - seq_len // 2


def random_tokens(seed, seq_len, d_model):
    """The untrained explorer's batch of two sequences of random token vectors, ``(2, seq_len, d_model)``.

    Sequence ``b`` comes from ``np.random.default_rng([seed, b + 1])``, a stream of its own:
    independent of the other sequence and of the weights, which
    ``MultiHeadAttention(seed=seed)`` draws from ``np.random.RandomState(seed)``. Tokens are
    drawn one after the other, so a longer sequence only adds tokens at the end.
    """
    return np.stack([np.random.default_rng([seed, b + 1]).standard_normal((seq_len, d_model)) for b in (0, 1)])


def induction_scores(weights, tokens):
    """Per head: the mean weight a repeated token puts on the token after its earlier occurrences.

    Parameters
    ----------
    weights : ndarray ``(num_heads, seq_len, seq_len)``
    tokens : ndarray of int ``(seq_len,)``

    Returns
    -------
    ndarray ``(num_heads,)``, or None when no token repeats an earlier one.
        For each query ``t`` whose token appeared before, at ``s < t``, the weight on the keys
        ``s + 1`` (summed over every earlier occurrence), averaged over those queries.
    """
    targets = [(t, [s + 1 for s in range(t) if tokens[s] == tokens[t]]) for t in range(len(tokens))]
    per_query = [weights[:, t, keys].sum(axis=-1) for t, keys in targets if keys]  # each (num_heads,)
    return np.mean(per_query, axis=0) if per_query else None


def previous_token_scores(weights):
    """Per head: the mean weight each query ``t >= 1`` puts on key ``t - 1``; ``(num_heads,)``."""
    return np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean(axis=-1)


def _runs(values):
    """``["1.000", "1.000", "0.000"]`` -> ``"1.000×2 0.000"``: one entry per query, repeats counted."""
    runs = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1][1] += 1
        else:
            runs.append([value, 1])
    return " ".join(value if count == 1 else f"{value}×{count}" for value, count in runs)


def _grid(num_heads):
    """(rows, columns) of heatmap panels: one row up to three heads, two rows after that."""
    rows = 1 if num_heads <= 3 else 2
    return rows, math.ceil(num_heads / rows)


def _panel_layout(num_heads):
    """Where the heatmaps and the colour bar go: equal squares packed in a grid, in figure fractions.

    Returns ``(panels, colorbar)``: one ``(left, bottom, width, height)`` per head, then the
    colour bar's, as tall as the grid and just right of it.
    """
    rows, cols = _grid(num_heads)
    fig_w, fig_h = FIGSIZE
    left, bottom, right, top = (_HEADS_BOX[0] * fig_w, _HEADS_BOX[1] * fig_h,  # inches from here on
                                _HEADS_BOX[2] * fig_w, _HEADS_BOX[3] * fig_h)
    label_x, label_y, title, gap = 0.45, 0.4, 0.25, 0.15  # room for tick labels, axis labels, "head h"
    side = min((right - left - label_x - (cols - 1) * gap) / cols,
               (top - bottom - label_y - rows * title - (rows - 1) * gap) / rows, 2.6)
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
    grid_bottom = y_top - grid_h
    colorbar = ((x0 + grid_w + 0.2) / fig_w, grid_bottom / fig_h, 0.12 / fig_w, (grid_h - title) / fig_h)
    return panels, colorbar


# -- controls whose range or options are fixed ----------------------------------------


def _refuse_if_fixed(control, proposal):
    name = proposal["trait"].name
    if control._fixed:
        raise TraitError(
            f"the explorer's {control._name} control has a fixed {name}, {getattr(control, name)!r}: the picture "
            f"is made for exactly that range; got {proposal['value']!r}"
        )


class _FixedBounds:
    """Mixin for a bounded int control: ``min`` and ``max`` cannot change once ``_fixed`` is True."""

    _fixed, _name = False, "?"

    @validate("min")
    def _validate_min(self, proposal):
        _refuse_if_fixed(self, proposal)
        return super()._validate_min(proposal)

    @validate("max")
    def _validate_max(self, proposal):
        _refuse_if_fixed(self, proposal)
        return super()._validate_max(proposal)


class _FixedOptions:
    """Mixin for a selection control: ``options`` cannot change once ``_fixed`` is True."""

    _fixed, _name = False, "?"

    @validate("options")
    def _validate_options(self, proposal):
        _refuse_if_fixed(self, proposal)
        return super()._validate_options(proposal)


class _IntSlider(_FixedBounds, widgets.IntSlider):
    pass


class _BoundedIntText(_FixedBounds, widgets.BoundedIntText):
    pass


class _Dropdown(_FixedOptions, widgets.Dropdown):
    pass


class _ToggleButtons(_FixedOptions, widgets.ToggleButtons):
    pass


class Explorer(widgets.VBox):
    """The widget :func:`explorer` returns (build it with that function, which checks the settings).

    See the module docstring for what it draws.

    Attributes
    ----------
    trained_weights : ipywidgets.ToggleButtons
        False: "untrained" (a random layer on random tokens); True: "trained (induction)".
    seq_len, d_model, num_heads, seed, mask : ipywidgets controls of the untrained explorer
    tokens, layer : ipywidgets controls of the trained explorer
        Set ``.value`` to change a setting; the picture and readout update at once.
    readout : ipywidgets.HTML
        The settings, ``d_k``, and the per-query sums of the weights (untrained) or each
        head's previous-token and induction scores and the model's guesses (trained).
    image : ipywidgets.Image
        The rendered figure (PNG bytes in ``image.value``).
    figure : matplotlib.figure.Figure
        The one figure, kept and updated in place.
    head_axes, head_images : lists, one per head
        The heatmap axes and their ``AxesImage`` (``get_array()`` is what is drawn).
    pca_axes, pca_inputs, pca_outputs, pca_arrows
        The embedding-shift panel: hollow input circles, filled output circles and arrows.
    x, output, weights, allowed, inputs_2d, outputs_2d, explained
        The arrays behind the current picture: the layer's input and output and the weights
        of the whole batch (untrained: 2 sequences; trained: 1), the cells a query may see,
        and the points of the PCA panel.
    shown_tokens, predictions : ndarrays of int ``(seq_len,)``, or None
        Trained: the token ids drawn (the last valid contents of the tokens box) and the
        model's guess of the token after each.
    token_error : str or None
        Trained: why the tokens box's text cannot be drawn, or None.
    renders : int
        How many times the figure has been rendered.
    """

    def __init__(self, d_model=64, num_heads=4, seq_len=8, seed=123, mask="none", *,
                 trained=False, tokens=DEFAULT_TOKENS, layer=1):
        style = {"description_width": "initial"}
        self._model = None  # the trained model, loaded on first use
        self.trained_weights = _ToggleButtons(
            options=WEIGHTS, value=trained, style={"button_width": "150px"}, layout=widgets.Layout(width="auto"),
            tooltips=("a freshly initialised layer on random token vectors",
                      "the chapter's trained two-layer model (notebook 09) on letters you type"),
        )
        self.seq_len = _IntSlider(
            value=seq_len, min=MIN_SEQ_LEN, max=MAX_SEQ_LEN, description="seq_len",
            continuous_update=False, style=style,
        )
        self.d_model = _Dropdown(
            options=D_MODELS, value=d_model, description="d_model", style=style,
            layout=widgets.Layout(width="150px"),
        )
        self.num_heads = _Dropdown(
            options=head_choices(d_model), value=num_heads, description="num_heads", style=style,
            layout=widgets.Layout(width="160px"),
        )
        self.seed = _BoundedIntText(
            value=seed, min=0, max=MAX_SEED, description="seed", style=style,
            layout=widgets.Layout(width="170px", margin="2px 0 0 24px"),
        )
        self.mask = _ToggleButtons(
            options=MASKS, value=mask, style={"button_width": "80px"}, layout=widgets.Layout(width="auto"),
            tooltips=("every query sees every key", "query i sees keys 0 to i",
                      "the second sequence's last half is padding"),
        )
        self.tokens = widgets.Text(
            value=tokens, description="tokens", placeholder=DEFAULT_TOKENS, continuous_update=False, style=style,
            layout=widgets.Layout(width="420px"),
        )
        self.layer = _ToggleButtons(
            options=[(f"layer {i}", i) for i in range(TRAINED_LAYERS)], value=layer, style={"button_width": "70px"},
            layout=widgets.Layout(width="auto"),
        )
        for name in ("trained_weights", "seq_len", "d_model", "num_heads", "seed", "mask", "layer"):
            control = getattr(self, name)
            control._name, control._fixed = name, True
        self.readout = widgets.HTML()
        self.explanation = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
        self.renders = 0
        self._blas = ThreadpoolController()
        self.shown_tokens, self.predictions, self.token_error = None, None, None

        self.figure = Figure(figsize=FIGSIZE, dpi=DPI)
        self._canvas = FigureCanvasAgg(self.figure)
        self._build_pca_panel()
        self.head_axes, self.head_images, self._head_count = [], [], 0
        self._build_head_panels()
        self._background, self._background_layout = None, None
        # The colour bar belongs to no heatmap: one 0..1 scale shared by whichever heads are shown.
        self._colorbar_axes = self.figure.add_axes(_panel_layout(num_heads)[1])
        colorbar = self.figure.colorbar(ScalarMappable(Normalize(0.0, 1.0), _CMAP), cax=self._colorbar_axes)
        colorbar.set_label("attention weight", fontsize=8)
        colorbar.ax.tick_params(labelsize=7)
        self._title = self.figure.text(0.5 * (_HEADS_BOX[0] + _HEADS_BOX[2]), 0.985, "", ha="center", va="bottom",
                                       fontsize=10, linespacing=1.3)

        self._busy = False
        self.d_model.observe(self._on_d_model, names="value")
        for control in (self.trained_weights, self.seq_len, self.num_heads, self.seed, self.mask, self.tokens,
                        self.layer):
            control.observe(self._on_change, names="value")

        label = widgets.Layout(width="52px")
        self._untrained_controls = widgets.VBox([
            widgets.HBox([self.seq_len, self.d_model, self.num_heads]),
            widgets.HBox([widgets.Label("mask", layout=label), self.mask, self.seed]),
        ])
        self._trained_controls = widgets.HBox([self.tokens, self.layer])
        style_sheet = widgets.HTML(_HIDE_STATIC_COPY, layout=widgets.Layout(display="none"))
        super().__init__([
            widgets.HBox([widgets.Label("weights", layout=label), self.trained_weights]),
            self._untrained_controls, self._trained_controls, self.readout, self.image, self.explanation,
            style_sheet,
        ])
        self.add_class(_EXPLORER_CLASS)
        self.update()

    def __repr__(self):  # the text a notebook shows where widgets cannot render (GitHub, nbconvert)
        if self.trained_weights.value:
            return f"Explorer(trained=True, tokens={self.tokens.value!r}, layer={self.layer.value})"
        return (f"Explorer(d_model={self.d_model.value}, num_heads={self.num_heads.value}, "
                f"seq_len={self.seq_len.value}, seed={self.seed.value}, mask={self.mask.value!r})")

    def _ipython_display_(self):
        """Display the live widget, then a static copy of its picture (see the module docstring)."""
        from IPython.display import display

        for data in self.display_outputs():
            display(data, raw=True)

    def display_outputs(self):
        """The two outputs a notebook cell gets: the widget's bundle, then a static PNG of the picture."""
        import base64

        static_copy = {"image/png": base64.b64encode(self.image.value).decode("ascii"), "text/plain": STATIC_COPY_TEXT}
        return [self._repr_mimebundle_(), static_copy]

    @property
    def trained_model(self):
        """The trained model (:func:`mhattn.model.load_trained`), loaded the first time it is needed.

        The untrained explorer never reads the checkpoint.
        """
        if self._model is None:
            from .model import load_trained

            model = load_trained()
            if len(model.layers) != TRAINED_LAYERS:
                raise ValueError(f"the explorer shows a model of {TRAINED_LAYERS} layers; the checkpoint has "
                                 f"{len(model.layers)}")
            self._model = model
        return self._model

    # -- reacting to the controls -------------------------------------------------------

    def _on_d_model(self, change):
        """New d_model: offer only the head counts that divide it, keep the old one if it still fits."""
        choices = head_choices(change["new"])
        old = self.num_heads.value
        keep = old if old in choices else max(h for h in choices if h <= old)
        self._busy = True  # one redraw for the whole change, not one per trait
        self.num_heads._fixed = False
        try:
            self.num_heads.options = choices
            self.num_heads.value = keep
        finally:
            self.num_heads._fixed, self._busy = True, False
        self._on_change(change)

    def _on_change(self, change):
        if not self._busy:
            self.update()

    # -- computing and drawing ----------------------------------------------------------

    def compute(self):
        """Run the model for the current settings; store the arrays and return the shown ``(weights, allowed)``.

        Both are ``(num_heads, seq_len, seq_len)``: one sequence's weights and the cells its
        queries may see. See the module docstring for the recipe.
        """
        if self.trained_weights.value:
            return self._compute_trained()
        seq_len, d_model, num_heads = self.seq_len.value, self.d_model.value, self.num_heads.value
        x = random_tokens(self.seed.value, seq_len, d_model)  # (2, seq_len, d_model)
        mask = {
            "none": None,
            "causal": causal_mask(seq_len),  # (seq_len, seq_len)
            "padding": padding_mask(np.array([seq_len, padded_length(seq_len)]), seq_len),  # (2, 1, 1, seq_len)
        }[self.mask.value]
        output, weights = MultiHeadAttention(d_model, num_heads, seed=self.seed.value)(x, mask)
        allowed = np.ones((2, num_heads, seq_len, seq_len), dtype=bool)
        if mask is not None:
            allowed &= mask  # (2, num_heads, seq_len, seq_len)
        self.x, self.output, self.weights, self.allowed = x, output, weights, allowed
        self.inputs_2d, self.outputs_2d, self.explained = embedding_shift_2d(x[SHOWN], output[SHOWN])
        return weights[SHOWN], allowed[SHOWN]

    def _parse_tokens(self):
        """The tokens box as token ids, or None after setting ``token_error`` to say why it cannot be drawn."""
        from .model import encode_letters

        longest = min(self.trained_model.max_len, MAX_SEQ_LEN)
        try:
            tokens = encode_letters(self.tokens.value)
        except ValueError as error:
            self.token_error = f"tokens: {error}"
            return None
        if not MIN_SEQ_LEN <= len(tokens) <= longest:
            self.token_error = (f"tokens: type {MIN_SEQ_LEN} to {longest} letters a-z (spaces optional); "
                                f"got {len(tokens)}")
            return None
        self.token_error = None
        return np.asarray(tokens)

    def _compute_trained(self):
        tokens = self._parse_tokens()
        if tokens is None:  # keep drawing the last tokens that could be drawn; the readout says why
            tokens = self.shown_tokens if self.shown_tokens is not None else self._default_tokens()
        model, seq_len = self.trained_model, len(tokens)
        mask = causal_mask(seq_len)  # (seq_len, seq_len): the mask the model was trained with
        h = model.embed[tokens] + model.pos[:seq_len]  # (seq_len, d_model): the residual stream
        for mha in model.layers[: self.layer.value + 1]:
            output, weights = mha(h[None], mask)  # (1, seq_len, d_model), (1, num_heads, seq_len, seq_len)
            h_before, h = h, h + output[0]
        allowed = np.broadcast_to(mask, weights.shape)  # (1, num_heads, seq_len, seq_len)
        self.x, self.output, self.weights, self.allowed = h_before[None], h[None], weights, allowed
        self.shown_tokens, self.predictions = tokens, model.predict(tokens)  # (seq_len,) each
        self.inputs_2d, self.outputs_2d, self.explained = embedding_shift_2d(h_before, h)
        return weights[0], allowed[0]

    @staticmethod
    def _default_tokens():
        from .model import encode_letters

        return np.asarray(encode_letters(DEFAULT_TOKENS))

    def update(self):
        """Recompute, redraw the figure in place, refresh the readout and the image."""
        trained = self.trained_weights.value
        self._untrained_controls.layout.display = "none" if trained else None
        self._trained_controls.layout.display = None if trained else "none"
        # The matrices here are tiny: BLAS worker threads cost far more than they save (and
        # spin on the cores matplotlib needs next), so run the computation on one thread.
        with self._blas.limit(limits=1, user_api="blas"):
            weights, allowed = self.compute()  # (num_heads, seq_len, seq_len) each
        num_heads, seq_len = weights.shape[:2]
        if num_heads != self._head_count:
            self._layout_head_panels(num_heads)
        shown = (tuple(self.shown_tokens), self.layer.value) if trained else self.mask.value
        layout = (num_heads, seq_len, trained, shown)  # what the static background shows
        if layout != self._background_layout:
            self._update_background(seq_len)
        extent = (-0.5, seq_len - 0.5, seq_len - 0.5, -0.5)
        for image, w, a in zip(self.head_images, weights, allowed, strict=True):
            image.set_data(np.ma.masked_array(w, mask=~a))  # masked cells are drawn grey
            image.set_extent(extent)
        self._update_pca_panel(seq_len)
        self.readout.value = self._readout_html(weights)
        self.explanation.value = self._explanation_html(seq_len)
        self.image.value = self._render_png(layout)
        self.renders += 1

    def _letters(self):
        """The shown tokens as letters (trained), one per position."""
        from .model import decode_tokens

        return decode_tokens(self.shown_tokens).split()

    def _update_background(self, seq_len):
        """Ticks and titles: the parts that change only with num_heads, seq_len, the mask or the tokens."""
        trained = self.trained_weights.value
        if trained and seq_len <= 16:
            ticks = np.arange(seq_len)
        else:
            ticks = MaxNLocator(nbins=4, integer=True, min_n_ticks=2).tick_values(0, seq_len - 1)
            ticks = ticks[(ticks >= 0) & (ticks <= seq_len - 1)].astype(int)
        labels = [self._letters()[t] for t in ticks] if trained else [str(t) for t in ticks]
        limits = (-0.5, seq_len - 0.5)
        padding = not trained and self.mask.value == "padding"
        for ax in self.head_axes:
            (line,) = ax.lines  # the padding boundary
            line.set_visible(padding)
            line.set_ydata([padded_length(seq_len) - 0.5] * 2)
            ax.set_xlim(limits)
            ax.set_ylim(limits[::-1])  # query 0 at the top, like a matrix
            for axis in (ax.xaxis, ax.yaxis):  # ticks only on the outer panels
                outer = bool(axis.get_label_text())
                axis.set_ticks(ticks if outer else [], labels=labels if outer else [])
        if trained:
            self._title.set_text(f"attention weights of layer {self.layer.value} of the trained model\n"
                                 "one panel per head  ·  row = query, column = key  ·  grey = masked (causal)")
            return
        grey = {"none": "", "causal": "\ngrey = masked: the weight is exactly 0",
                "padding": "\ngrey = masked (weight exactly 0); below the dashes: padding queries"}[self.mask.value]
        self._title.set_text(f"attention weights of sequence {SHOWN + 1} of a batch of 2\n"
                             f"one panel per head  ·  row = query, column = key{grey}")

    def _render_png(self, layout):
        """Draw the figure and encode it as PNG bytes.

        Everything that changes on every update (heatmaps, points, arrows, labels) is an
        *animated* artist, left out of ``canvas.draw()``. The rest -- frames, ticks, titles,
        the colour bar -- is drawn once per ``layout`` and kept as a bitmap; an update copies
        that bitmap back and draws only the animated artists on top (matplotlib's blitting).
        """
        if layout != self._background_layout:
            self._canvas.draw()  # the static parts only
            self._background = self._canvas.copy_from_bbox(self.figure.bbox)
            self._background_layout = layout
        else:
            self._canvas.restore_region(self._background)
        for artist in self._animated():
            self.figure.draw_artist(artist)
        rgba = np.asarray(self._canvas.buffer_rgba())  # (height, width, 4) uint8
        buffer = io.BytesIO()
        PILImage.fromarray(rgba[..., :3]).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    def _animated(self):
        """The artists redrawn on every update, in drawing order."""
        boundaries = [ax.lines[0] for ax in self.head_axes if ax.lines[0].get_visible()]  # over the heatmaps
        return [*self.head_images, *boundaries, self.pca_arrows, self.pca_inputs, self.pca_outputs, self._pca_title,
                *(label for label in self._pca_labels if label.get_visible())]

    def _build_head_panels(self):
        """Make ``MAX_HEADS`` heatmap panels once, hidden; :meth:`_layout_head_panels` shows some."""
        self._panel_pool = []
        for h in range(MAX_HEADS):
            ax = self.figure.add_axes((0, 0, 0.1, 0.1), visible=False)
            image = ax.imshow(np.zeros((2, 2)), cmap=_CMAP, vmin=0.0, vmax=1.0, interpolation="nearest",
                              animated=True)
            ax.set_title(f"head {h}", fontsize=9, pad=3)
            ax.tick_params(labelsize=7, length=2, pad=1.5)
            # With the padding mask, a dashed line separates the real queries from the padding ones.
            ax.axhline(0, color="#333333", linewidth=1.0, linestyle=(0, (3, 2)), visible=False, animated=True)
            self._panel_pool.append((ax, image))

    def _layout_head_panels(self, num_heads):
        """Show the first ``num_heads`` panels, packed in a grid; hide the rest.

        Moving existing axes costs far less than creating new ones (and leaves nothing behind).
        """
        rows, cols = _grid(num_heads)
        panels, colorbar = _panel_layout(num_heads)
        for h, (ax, _) in enumerate(self._panel_pool):
            ax.set_visible(h < num_heads)
            if h < num_heads:
                ax.set_position(panels[h])
                col = h % cols
                ax.set_ylabel("query position" if col == 0 else "", fontsize=8, labelpad=2)
                ax.set_xlabel("key position" if h + cols >= num_heads else "", fontsize=8, labelpad=1)  # bottom
        self.head_axes = [ax for ax, _ in self._panel_pool[:num_heads]]
        self.head_images = [image for _, image in self._panel_pool[:num_heads]]
        self._colorbar_axes.set_position(colorbar)
        grid_top = panels[0][1] + panels[0][3]
        self._title.set_position((self._title.get_position()[0], grid_top + 0.3 / FIGSIZE[1]))  # above "head 0"
        self._head_count = num_heads
        self._background_layout = None

    def _build_pca_panel(self):
        ax = self.pca_axes = self.figure.add_axes((_PCA_BOX[0], _PCA_BOX[1], _PCA_BOX[2] - _PCA_BOX[0],
                                                   _PCA_BOX[3] - _PCA_BOX[1]))
        ax.set_xticks([])  # principal-component coordinates have no meaning of their own
        ax.set_yticks([])
        ax.set_xlabel("principal component 1", fontsize=9)
        ax.set_ylabel("principal component 2", fontsize=9, labelpad=2)
        empty = np.zeros((0, 2))
        self.pca_inputs = ax.scatter(empty[:, 0], empty[:, 1], s=42, facecolors="white", edgecolors=_INPUT_COLOR,
                                     linewidths=1.3, zorder=3, animated=True, label="input (before the layer)")
        self.pca_outputs = ax.scatter(empty[:, 0], empty[:, 1], s=30, color=_INPUT_COLOR, zorder=4, animated=True,
                                      label="output (after the layer)")
        self.pca_arrows = None
        self._pca_labels = [ax.text(0, 0, str(i), fontsize=8.5, ha="center", va="center", visible=False,
                                    animated=True, zorder=5) for i in range(MAX_SEQ_LEN)]
        self._pca_title = ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom", fontsize=9,
                                  animated=True)
        ax.legend(loc="upper left", fontsize=8.5, framealpha=0.85, handletextpad=0.3, borderpad=0.4)

    def _update_pca_panel(self, seq_len):
        ax, start, end = self.pca_axes, self.inputs_2d, self.outputs_2d  # (seq_len, 2) each
        trained = self.trained_weights.value
        padding = not trained and self.mask.value == "padding"
        real = np.arange(seq_len) < (padded_length(seq_len) if padding else seq_len)
        colors = np.where(real, _INPUT_COLOR, _PAD_COLOR)
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
        ax.set_ylim(low[1] - margin, high[1] + 2.5 * margin)  # room for the legend
        every = 1 if seq_len <= 16 else 4  # beyond 16 tokens the labels would overlap: label every 4th
        names = self._letters() if trained else [str(i) for i in range(seq_len)]
        for i, label in enumerate(self._pca_labels):  # the position number (or letter), just past each output
            label.set_visible(i < seq_len and i % every == 0)
            if i < seq_len:
                direction = delta[i] / (np.linalg.norm(delta[i]) + 1e-12)
                label.set_position(end[i] + 0.55 * margin * direction)
                label.set_color(colors[i])
                label.set_text(names[i])
        what = f"layer {self.layer.value} moved each token" if trained else "the layer moved each token"
        self._pca_title.set_text(f"where {what}\n"
                                 f"(PCA of inputs + outputs: {100 * self.explained.sum():.0f}% of variance)")

    # -- text -------------------------------------------------------------------------

    def _readout_html(self, weights):
        if self.trained_weights.value:
            return self._trained_readout_html(weights)
        num_heads, seq_len = weights.shape[:2]
        sums = weights.sum(axis=-1)  # (num_heads, seq_len): one sum per head and query
        per_query = _runs([f"{s:.3f}" for s in sums[0]])
        same = np.allclose(sums, sums[0], atol=5e-4)
        heads_note = "same in every head" if same else f"head 0; heads range {sums.min():.3f} to {sums.max():.3f}"
        if self.mask.value == "padding":
            pad = seq_len - padded_length(seq_len)
            pad_note = f" (padding rows: {pad}; they still sum to 1, the mask hides keys, not queries)"
        else:
            pad_note = " (padding rows: 0)"
        return (
            f"<code>seq_len={seq_len} · num_heads={num_heads} · d_k={self.d_model.value // num_heads} · "
            f"mask={self.mask.value}</code><br>"
            f"<code>row sums, queries 0 to {seq_len - 1} ({heads_note}): {per_query}{pad_note}</code>"
        )

    def _trained_readout_html(self, weights):
        from .model import decode_tokens

        model, tokens = self.trained_model, self.shown_tokens
        num_heads, seq_len = weights.shape[:2]
        letters = html.escape(" ".join(self._letters()))
        lines = [f"<code>trained model · layer {self.layer.value} of {len(model.layers)} · num_heads={num_heads} · "
                 f"d_k={model.d_model // num_heads} · mask=causal · {seq_len} tokens: {letters}</code>"]
        if self.token_error:
            lines.insert(0, f"<code style='color:#b00020'>{html.escape(self.token_error)}; still showing the tokens "
                            "below</code>")
        previous = " ".join(f"{s:.2f}" for s in previous_token_scores(weights))
        lines.append(f"<code>previous-token score per head (weight on the key just before): {previous}</code>")
        induction = induction_scores(weights, tokens)
        if induction is None:
            lines.append("<code>induction score per head: no letter repeats yet (type one twice)</code>")
        else:
            scores = " ".join(f"{s:.2f}" for s in induction)
            lines.append(f"<code>induction score per head (weight on the key after the query letter's earlier "
                         f"occurrence): {scores}</code>")
        lines.append(f"<code>the model's guess for the next letter, after each token: "
                     f"{html.escape(decode_tokens(self.predictions))}</code>")
        return "<br>".join(lines)

    def _explanation_html(self, seq_len):
        if self.trained_weights.value:
            text = ("The chapter's trained model (notebook 09): two layers of attention, no MLP, trained to continue "
                    "sequences of random letters that repeat. It reads the letters in the tokens box. Once a letter "
                    "repeats, induction heads in layer 1 look from it to the letter that followed its earlier "
                    "occurrence, and that letter is the model's guess for what comes next: type a b c d x a b c and "
                    "look at the last three rows of layer 1 (the induction score says which heads do it). "
                    "Layer 0 prepares the keys they match (the previous-token score "
                    "shows which of its heads look one token back). Switch to untrained for a random layer.")
        elif self.mask.value == "none":
            text = ("Every query may look at every key, so each row of a heatmap shares out a total weight of 1 "
                    "among all positions. The heads share the input but each has its own slice of "
                    "W_qkv, so they put their weight in different places.")
        elif self.mask.value == "causal":
            text = ("The causal mask lets query i see keys 0 to i only: everything above the diagonal is grey, and "
                    "row 0 puts all its weight on key 0. Move seq_len: the rows that were already there do "
                    "not change, because no query can see the tokens added after it.")
        else:
            real = padded_length(seq_len)
            text = (f"Sequence 2 has {real} real tokens; positions {real} to {seq_len - 1} are padding that only "
                    "makes it as long as sequence 1. The padding mask hides those keys (grey columns) from every "
                    "query, so the real tokens' outputs are what they would be without the padding. The padding "
                    "queries (bottom rows, grey points on the right) still get outputs; a model ignores them.")
        return f"<div style='max-width:900px;font-size:0.95em;line-height:1.35'>{text}</div>"


def explorer(d_model=64, num_heads=4, seq_len=8, seed=123, mask="none", *, trained=False, tokens=DEFAULT_TOKENS,
             layer=1):
    """Build the interactive multi-head attention explorer.

    Parameters
    ----------
    d_model : int, one of ``D_MODELS`` = (12, 16, 32, 48, 64), default 64
    num_heads : int, default 4
        Must divide ``d_model`` and be at most ``MAX_HEADS`` = 8; see :func:`head_choices`.
    seq_len : int in [2, 32], default 8
    seed : int in [0, 2**32 - 1], default 123
        Seeds the random tokens and, independently, the weights (see :func:`random_tokens`).
    mask : {"none", "causal", "padding"}, default "none"
    trained : bool, keyword only, default False
        Start with the trained model ("trained (induction)") instead of the untrained layer.
    tokens : str, keyword only, default ``"a b c d x a b c"``
        What the trained model reads: 2 to 32 letters a-z, spaces optional.
    layer : int, keyword only, default 1
        The trained model's layer shown: 0 or 1.

    Returns
    -------
    Explorer
        An ``ipywidgets.VBox``: show it as a cell's last line or with ``display(explorer())``.
        Displayed that way it also leaves a static copy of its picture for renderers without a
        kernel.

    Raises
    ------
    TypeError, ValueError
        If a starting value is not one the controls could show.
    """
    d_model = _checks.positive_int("d_model", d_model)
    if d_model not in D_MODELS:
        raise ValueError(f"d_model must be one of {D_MODELS}; got {d_model}")
    num_heads = _checks.positive_int("num_heads", num_heads)
    if num_heads not in head_choices(d_model):
        raise ValueError(
            f"num_heads must divide d_model = {d_model} and be at most {MAX_HEADS}: one of "
            f"{head_choices(d_model)}; got {num_heads}"
        )
    seq_len = _checks.positive_int("seq_len", seq_len)
    if not MIN_SEQ_LEN <= seq_len <= MAX_SEQ_LEN:
        raise ValueError(f"seq_len must be in [{MIN_SEQ_LEN}, {MAX_SEQ_LEN}]; got {seq_len}")
    seed = _checks.seed(seed)
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}; got {mask!r}")
    trained = _checks.flag("trained", trained)
    if not isinstance(tokens, str):
        raise TypeError(f"tokens must be a str of letters, like {DEFAULT_TOKENS!r}; got {tokens!r}")
    from .model import encode_letters

    letters = encode_letters(tokens)  # a ValueError names any character that is not a letter
    if not MIN_SEQ_LEN <= len(letters) <= MAX_SEQ_LEN:
        raise ValueError(f"tokens must hold {MIN_SEQ_LEN} to {MAX_SEQ_LEN} letters; got {len(letters)} in {tokens!r}")
    if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, (int, np.integer)):
        raise TypeError(f"layer must be an int; got {layer!r} of type {type(layer).__name__}")
    if not 0 <= layer < TRAINED_LAYERS:
        raise ValueError(f"layer must be in [0, {TRAINED_LAYERS - 1}]; got {layer}")
    return Explorer(d_model=d_model, num_heads=num_heads, seq_len=seq_len, seed=seed, mask=mask, trained=trained,
                    tokens=tokens, layer=int(layer))
