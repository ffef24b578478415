"""The doors of :class:`mhattn.learn.model.InductionModel` and of the letters it reads and writes.

The model's own calls to its layers are checked by the layers (see :mod:`mhattn.checks`),
but their messages name the layer's arguments (``x``, ``W_qkv``). These checks come first,
at the model's door, so that every error names what the caller passed: the tokens, a head
to ablate, a parameter by its checkpoint name. The checkpoint file's own checks are in
:mod:`.checkpoint`, :mod:`.checkpoint_read` and :mod:`.checkpoint_write`.
"""

import math

import numpy as np

from .checkpoint import MAX_PARAMETER_BYTES, expected_shapes
from .module import head_counts
from .values import finite, flag, integer, plain_array, positive_int
from .values import seed as check_seed

LETTERS = "abcdefghijklmnopqrstuvwxyz"  #: the letters a..z are token ids 0..25


def tokens(value, vocab, max_len, name="tokens"):
    """``value`` as an int array of shape ``(seq_len,)`` or ``(batch, seq_len)``, or a clear error naming ``name``."""
    expected = f"integer ids in [0, {vocab}), shape (seq_len,) or (batch, seq_len), 1 <= seq_len <= max_len = {max_len}"
    array = plain_array(name, value, expected, " (rows of different lengths): pad them to one length, or pass "
                        "one sequence at a time")
    if array.ndim not in (1, 2):
        raise ValueError(f"{name} must be {expected}; got shape {array.shape}")
    if array.shape[-1] == 0 or array.shape[-1] > max_len:
        raise ValueError(f"{name} must be {expected}; got seq_len = {array.shape[-1]} (shape {array.shape})")
    if array.size == 0:
        raise ValueError(f"{name} must be {expected}, at least one sequence; got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be {expected}; got dtype {array.dtype}")
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"{name} must be {expected}; got values {array.min()} to {array.max()}")
    return array


def _index(name, value, count):
    allowed = "None or " if name == "head" else ""  # head=None: the whole layer
    value = integer(f"ablate: {name}", value, f"{allowed}an int in [0, {count - 1}]")
    if not 0 <= value < count:
        raise ValueError(f"ablate: {name} must be {allowed}in [0, {count - 1}]; got {value}")
    return int(value)


def ablate(value, num_layers, num_heads):
    """``value`` as a list of ``(layer, head or None)`` pairs, or a clear error."""
    try:
        pairs = list(value)
    except TypeError:
        raise TypeError(f"ablate must be an iterable of (layer, head) pairs; got {value!r}") from None
    checked = []
    for pair in pairs:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"ablate must hold (layer, head) pairs (head=None: the whole layer); got {pair!r}")
        layer, head = pair
        layer = _index("layer", layer, num_layers)
        checked.append((layer, None if head is None else _index("head", head, num_heads)))
    return checked


def parameters(model):
    """Check every parameter of ``model``: a finite float array of its shape, named as in the checkpoint."""
    shapes = expected_shapes(len(model.layers), model.vocab, model.max_len, model.d_model)
    for name, value in model.parameters().items():
        array = np.asarray(value)
        if array.dtype.kind != "f":
            raise TypeError(f"InductionModel parameter {name} must be a float array; got dtype {array.dtype}")
        if array.shape != shapes[name]:
            raise ValueError(f"InductionModel parameter {name} must have shape {shapes[name]}; got {array.shape}")
        finite(f"InductionModel parameter {name}", array)


def scored_batch(model, tokens, n):
    """``(tokens, n)`` of a training batch, checked: ``(batch, seq_len)`` ids and ``(batch,)`` lengths.

    Positions ``n`` to ``2n - 2`` predict tokens up to ``2n - 1``, so ``1 <= n <= seq_len // 2``.
    The model's parameters are checked too.
    """
    tokens = check_token_ids(tokens, model.vocab, model.max_len)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a batch of shape (batch, seq_len); got shape {tokens.shape}")
    if isinstance(n, np.ma.MaskedArray):
        raise TypeError(f"n must be ints of shape ({tokens.shape[0]},) in a plain ndarray, not a masked array "
                        "(its mask would be lost)")
    n = np.asarray(n)
    if n.dtype.kind not in "iu" or n.shape != tokens.shape[:1]:
        raise ValueError(f"n must be ints of shape ({tokens.shape[0]},), one per sequence; got {n.dtype} {n.shape}")
    seq_len = tokens.shape[1]
    if n.min() < 1 or n.max() > seq_len // 2:
        raise ValueError(f"n must be in [1, seq_len // 2 = {seq_len // 2}]; got {n.min()} to {n.max()}")
    parameters(model)
    return tokens, n


check_ablate = ablate  # the door functions below take an argument named ``ablate``
check_token_ids = tokens  # the door functions below take an argument named ``tokens``


# --- the doors of InductionModel's methods -------------------------------------------------------------


def model_init_args(self, num_layers, vocab, max_len, d_model, num_heads, seed):
    """``InductionModel(...)``: positive sizes, ``num_heads`` dividing ``d_model``, weights a checkpoint can hold."""
    num_layers, vocab, max_len = (positive_int(name, value) for name, value in
                                  (("num_layers", num_layers), ("vocab", vocab), ("max_len", max_len)))
    d_model, num_heads, _ = head_counts(d_model, num_heads, None)
    nbytes = 8 * sum(math.prod(shape) for shape in expected_shapes(1, vocab, max_len, d_model).values())
    nbytes += 8 * (num_layers - 1) * 4 * d_model * d_model
    if nbytes > MAX_PARAMETER_BYTES:
        raise ValueError(f"InductionModel(num_layers={num_layers}, vocab={vocab}, max_len={max_len}, "
                         f"d_model={d_model}): "
                         f"the weights would take {nbytes / 2**30:.3g} GiB; a model (and its checkpoint) holds at most "
                         f"{MAX_PARAMETER_BYTES / 2**30:.3g} GiB")
    return {"self": self, "num_layers": num_layers, "vocab": vocab, "max_len": max_len, "d_model": d_model,
            "num_heads": num_heads, "seed": check_seed(seed)}, None


def model_forward_args(self, tokens, ablate, use_positions):
    """``forward`` and ``predict``: tokens the model can read, heads it has, parameters that are finite."""
    tokens = check_token_ids(tokens, self.vocab, self.max_len)
    parameters(self)
    ablate = check_ablate(ablate, len(self.layers), self.num_heads)
    use_positions = flag("use_positions", use_positions)
    return {"self": self, "tokens": tokens, "ablate": ablate, "use_positions": use_positions}, None


def ablated_layers_args(self, ablate):
    """``ablated_layers``: ``(layer, head or None)`` pairs of heads the model has."""
    return {"self": self, "ablate": check_ablate(ablate, len(self.layers), self.num_heads)}, None


def check_tokens_args(self, tokens):
    """``check_tokens``: ids in ``[0, vocab)``, ``1 <= seq_len <= max_len``."""
    return {"self": self, "tokens": check_token_ids(tokens, self.vocab, self.max_len)}, None


def model_no_args(self):
    """A method without arguments (``parameters``)."""
    return {"self": self}, None


# --- the doors of the module's functions ----------------------------------------------------------------


def load_trained_args(num_layers=2):
    """``load_trained`` and ``training_record``: ``num_layers`` is 1 or 2 (the shipped checkpoints; True is not 1)."""
    value = integer("num_layers", num_layers, "1 or 2 (the shipped checkpoints)")
    if value not in (1, 2):
        raise ValueError(f"num_layers must be 1 or 2 (the shipped checkpoints); got {num_layers!r}")
    return {"num_layers": value}, None


training_record_args = load_trained_args


def load_shortcut_args():
    """``load_shortcut`` takes no arguments."""
    return {}, None


def encode_letters_args(text):
    """``encode_letters``: a string of letters a-z (either case) and spaces."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string of letters a-z; got {text!r} of type {type(text).__name__}")
    bad = sorted({c for c in "".join(text.lower().split()) if c not in LETTERS})
    if bad:
        raise ValueError(f"text must hold only letters a-z and spaces; got {bad} in {text!r}")
    return {"text": text}, None


def decode_tokens_args(tokens):
    """``decode_tokens``: a 1-D sequence of integer ids (any ints: those without a letter are written ``<id>``)."""
    expected = "a 1-D sequence of integer token ids"
    if isinstance(tokens, (str, bytes, np.ma.MaskedArray)):
        raise TypeError(f"tokens must be {expected}; got {tokens!r} of type {type(tokens).__name__}")
    try:
        array = np.asarray(tokens)
    except ValueError:
        raise ValueError(f"tokens must be {expected}; got a ragged nested sequence") from None
    if array.ndim != 1:
        raise ValueError(f"tokens must be {expected}; got shape {array.shape}")
    if array.dtype.kind not in "iu" and array.size:
        raise TypeError(f"tokens must be {expected}; got dtype {array.dtype} ({tokens!r})")
    return {"tokens": array.astype(np.int64)}, None
