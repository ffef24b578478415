"""The explorer's controls: a thin ipywidgets layer over :func:`compute_frame` and :class:`FrameDrawing`.

:func:`explorer` returns one widget. Its ``weights`` switch chooses what it runs: the **untrained**
layer (controls ``seq_len``, ``d_model``, ``num_heads``, the mask, the seed and RoPE) or the
**trained** induction model (controls: the tokens, the layer, learned positions on or off). Only
the controls of the current choice are shown. A change of any control builds a :class:`State`,
computes its :class:`Frame` and draws it; nothing else is computed here.

The controls' ranges and options are fixed: the picture can show every value they offer, and
setting a new ``min``, ``max`` or ``options`` raises :class:`traitlets.TraitError`.

Displayed as a notebook cell's result, the explorer also leaves a static PNG of its picture (:mod:`.static_copy`).
"""

from ..checks.door import checked
from ..checks.explorer import (  # the explorer's limits and menus, and what the tokens box may hold
    D_MODELS,
    DEFAULT_TOKENS,
    MASKS,
    MAX_SEED,
    MAX_SEQ_LEN,
    MIN_SEQ_LEN,
    TRAINED_LAYERS,
    explorer_init_args,
    head_choices,
    parse_tokens,
    rope_fits,
    widget_args,
)
from ..checks.optional import require
from ..learn.shipped import load_trained
from .background import LatestWins, in_a_kernel, one_blas_thread
from .draw import FrameDrawing, part_widths
from .fixed import BoundedIntText, Dropdown, IntSlider, toggle
from .frame import State, compute_frame
from .static_copy import EXPLORER_CLASS, HIDE_STATIC_COPY, StaticCopy
from .text import explanation_html, readout_html

widgets = require("ipywidgets")

WEIGHTS = (("untrained", False), ("trained (induction)", True))  # (label, value of ``trained_weights``)
_WRAP = widgets.Layout(flex_flow="row wrap", align_items="center")  # rows of controls wrap on a phone


class Explorer(StaticCopy, widgets.VBox):
    """The widget :func:`explorer` returns, for a :class:`State` the shipped model can show.

    Attributes
    ----------
    trained_weights : ipywidgets.ToggleButtons
        False: "untrained" (a random layer on random tokens); True: "trained (induction)".
    seq_len, d_model, num_heads, seed, mask, rope : controls of the untrained layer
        ``rope`` ("off" / "on"): rotary position embeddings on queries and keys.
    tokens, layer, positions : controls of the trained model (``positions``: "learned" / "none")
        Set ``.value`` to change a setting; the picture and readout update at once.
    state : State
        The settings drawn now (the tokens: the last contents of the box that could be drawn).
    frame : Frame
        Its numbers (:func:`mhattn.explorer.frame.compute_frame`).
    drawing : FrameDrawing
        The figure (``drawing.head_images``, ``drawing.pca_inputs``, ...).
    readout, explanation : ipywidgets.HTML
    images : tuple of two ipywidgets.Image
        The rendered figure in two parts, the heatmaps and the PCA plot (PNG bytes in ``.value``,
        ``SCALE`` pixels per CSS pixel), side by side where the page is wide enough.
    picture : bytes
        The whole figure as shown now, as one PNG.
    token_error : str or None
        Why the tokens box's text cannot be drawn, or None.
    note : str or None
        What the readout says first, in red: the token error, or why RoPE is off.
    renders : int
        How many times the figure has been rendered.
    redraws : LatestWins
        Draws the newest setting. Inside a Jupyter kernel it draws in a thread of its own, so that settings
        the controls pass through while a picture is drawn are skipped, not queued; elsewhere (a script, a
        test) each change is drawn before ``.value = ...`` returns. ``redraws.wait()`` waits for the last picture.

    Examples
    --------
    >>> widget = Explorer(State(seq_len=4, d_model=12, num_heads=2))  # outside a kernel: drawn at once
    >>> widget.seq_len.value = 5  # as if the slider moved
    >>> widget.frame.weights.shape  # (num_heads, seq_len, seq_len)
    (2, 5, 5)
    """

    @checked(explorer_init_args)
    def __init__(self, state, background=None):
        style = {"description_width": "initial"}
        self._model = None  # the trained model, loaded on first use
        self.trained_weights = toggle(WEIGHTS, state.trained, "150px", (
            "a freshly initialised layer on random token vectors",
            "the chapter's trained two-layer model (notebook 07) on letters you type"))
        self.seq_len = IntSlider(value=state.seq_len, min=MIN_SEQ_LEN, max=MAX_SEQ_LEN, description="seq_len",
                                  continuous_update=False, style=style,
                                  layout=widgets.Layout(width="330px", max_width="100%"))
        self.d_model = Dropdown(options=D_MODELS, value=state.d_model, description="d_model", style=style,
                                 layout=widgets.Layout(width="150px"))
        self.num_heads = Dropdown(options=head_choices(state.d_model), value=state.num_heads,
                                   description="num_heads", style=style, layout=widgets.Layout(width="160px"))
        self.seed = BoundedIntText(value=state.seed, min=0, max=MAX_SEED, description="seed", style=style,
                                    layout=widgets.Layout(width="170px"))
        self.mask = toggle(MASKS, state.mask, "80px", ("every query sees every key", "query i sees keys 0 to i",
                                                        "the second sequence's last half is padding"))
        self.rope = toggle(("off", "on"), "on" if state.position_mode == "rope" else "off", "50px",
                            ("no positions: attention cannot tell the order of the tokens",
                             "rotary position embeddings (RoPE) on queries and keys"))
        self.tokens = widgets.Text(value=state.tokens, description="tokens", placeholder=DEFAULT_TOKENS,
                                   continuous_update=False, style=style,
                                   layout=widgets.Layout(width="420px", max_width="100%"))
        self.layer = toggle([(f"layer {i}", i) for i in range(TRAINED_LAYERS)], state.layer, "70px")
        self.positions = toggle(("learned", "none"), state.position_mode if state.trained else "learned", "70px",
                                 ("the model's learned position embeddings", "the token embeddings alone"))
        for name in ("trained_weights", "seq_len", "d_model", "num_heads", "seed", "mask", "rope", "layer",
                     "positions"):
            control = getattr(self, name)
            control._name, control._fixed = name, True
        self.readout, self.explanation = widgets.HTML(), widgets.HTML()
        # Each part at its own width, never stretched (a stretched PNG blurs); narrower on a phone.
        self.images = tuple(widgets.Image(format="png", layout=widgets.Layout(width=f"{width:g}px", max_width="100%",
                                                                              height="auto"))
                            for width in part_widths())
        self.drawing = FrameDrawing()
        self.token_error, self.note, self.state, self.frame = None, None, None, None
        self._tokens = state.tokens  # the last tokens that could be drawn (explorer() checked these)
        self.redraws = LatestWins(self._draw, in_a_kernel() if background is None else background)

        self._busy = False
        self.d_model.observe(self._on_d_model, names="value")
        for control in (self.trained_weights, self.seq_len, self.num_heads, self.seed, self.mask, self.rope,
                        self.tokens, self.layer, self.positions):
            control.observe(self._on_change, names="value")

        def label(text):
            return widgets.Label(text, layout=widgets.Layout(width="62px"))

        self._untrained_controls = widgets.VBox([
            widgets.HBox([self.seq_len, self.d_model, self.num_heads], layout=_WRAP),
            widgets.HBox([label("mask"), self.mask, self.seed, label("RoPE"), self.rope], layout=_WRAP),
        ])
        self._trained_controls = widgets.VBox([
            widgets.HBox([self.tokens, self.layer], layout=_WRAP),
            widgets.HBox([label("positions"), self.positions], layout=_WRAP),
        ])
        style_sheet = widgets.HTML(HIDE_STATIC_COPY, layout=widgets.Layout(display="none"))
        super().__init__([widgets.HBox([label("weights"), self.trained_weights], layout=_WRAP),
                          self._untrained_controls, self._trained_controls, self.readout,
                          widgets.HBox(self.images, layout=widgets.Layout(flex_flow="row wrap")),
                          self.explanation, style_sheet])
        self.add_class(EXPLORER_CLASS)
        self.update()

    def __repr__(self):  # the text a notebook shows where widgets cannot render (GitHub, nbconvert)
        if self.trained_weights.value:
            return f"Explorer(trained=True, tokens={self.tokens.value!r}, layer={self.layer.value})"
        return (f"Explorer(d_model={self.d_model.value}, num_heads={self.num_heads.value}, "
                f"seq_len={self.seq_len.value}, seed={self.seed.value}, mask={self.mask.value!r})")

    @property
    def trained_model(self):
        """The trained model (:func:`mhattn.learn.load_trained`), loaded the first time it is needed."""
        if self._model is None:
            self._model = load_trained()
        return self._model

    @property
    def picture(self):
        return self.drawing.png()

    @property
    def renders(self):
        return self.drawing.renders

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
            self._show_controls()
            self.redraws.submit(self.current_state_and_note())

    @checked(widget_args, results_finite=False)
    def current_state(self):
        """The State the controls say, with the last tokens that could be drawn (``token_error`` says why).

        Examples
        --------
        >>> Explorer(State(seq_len=4, d_model=12, num_heads=2, mask="causal")).current_state().mask
        'causal'
        """
        return self.current_state_and_note()[0]

    @checked(widget_args, results_finite=False)
    def current_state_and_note(self):
        """``(state, note)``: the State the controls say, and what the readout says first (or None).

        Tokens the trained model cannot read leave the last ones that could be drawn in the
        State, and ``token_error`` says why. The untrained layer reads no tokens: whatever the
        hidden tokens box holds, it keeps those last ones, and the box is read again when the
        trained weights return.

        Examples
        --------
        >>> widget = Explorer(State(trained=True, tokens="a b a b"))
        >>> widget.tokens.value = "a 7"  # not letters: the picture keeps the last tokens it could draw
        >>> widget.current_state_and_note()[0].tokens
        'a b a b'
        """
        trained = self.trained_weights.value
        self.token_error = None
        if trained:
            try:
                parse_tokens(self.tokens.value, min(self.trained_model.max_len, MAX_SEQ_LEN))
                self._tokens = self.tokens.value
            except ValueError as error:
                self.token_error = f"tokens: {error}"
        note = None if self.token_error is None else f"{self.token_error}; still showing the tokens below"
        rope = self.rope.value == "on"
        if rope and not trained and not rope_fits(self.d_model.value, self.num_heads.value):
            rope, note = False, (f"RoPE is off: it turns pairs of coordinates, and d_k = "
                                 f"{self.d_model.value // self.num_heads.value} is odd")
        positions = self.positions.value if trained else ("rope" if rope else "none")
        state = State(trained=trained, seq_len=self.seq_len.value, d_model=self.d_model.value,
                      num_heads=self.num_heads.value, seed=self.seed.value, mask=self.mask.value,
                      tokens=self._tokens, layer=self.layer.value, positions=positions)
        return state, note

    @checked(widget_args, results_finite=False)
    def update(self):
        """Compute the frame of the controls' state, draw it, refresh the readout and the image; return when shown.

        Examples
        --------
        >>> widget = Explorer(State(seq_len=4, d_model=12, num_heads=2))  # drawn once
        >>> widget.update(), widget.renders  # the same state, drawn again
        (None, 2)
        """
        self._show_controls()
        self.redraws.submit(self.current_state_and_note())
        self.redraws.wait()

    def _show_controls(self):
        """Only the controls of the current weights are shown."""
        trained = self.trained_weights.value
        self._untrained_controls.layout.display = "none" if trained else None
        self._trained_controls.layout.display = None if trained else "none"

    def _draw(self, state_and_note):
        state, note = state_and_note
        with one_blas_thread():
            frame = compute_frame(state, self.trained_model if state.trained else None)
        self.state, self.frame, self.note = state, frame, note
        self.readout.value = readout_html(frame, note)
        self.explanation.value = explanation_html(frame)
        for image, png in zip(self.images, self.drawing.draw(frame), strict=True):
            image.value = png
