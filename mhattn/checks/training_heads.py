"""The arguments of notebook 08's experiment (:mod:`mhattn.learn.several_heads`): the two-slot model and its task."""

from .learning import attention_weights, counts, head_indices, int_array, model_like, real, rng_value
from .model import tokens as check_tokens
from .values import index, learning_rate, positive_int
from .values import seed as check_seed


def slot_tokens(model, tokens):
    """A :class:`~mhattn.learn.several_heads.TwoSlotModel`'s tokens: ints ``(batch, seq_len)`` in ``[0, vocab)``."""
    array = check_tokens(tokens, model.vocab, model.seq_len)
    if array.ndim != 2 or array.shape[1] != model.seq_len:
        raise ValueError(f"tokens must be ints of shape (batch, seq_len = {model.seq_len}); got shape {array.shape}")
    return array


def two_slot_model_args(self, num_heads, vocab, seq_len, d_model, seed):
    """Arguments of :class:`~mhattn.learn.several_heads.TwoSlotModel` (``num_heads`` and ``d_model``: its layer's)."""
    vocab, seq_len = positive_int("vocab", vocab), positive_int("seq_len", seq_len)
    if seq_len <= self.FIRST_SCORED:
        raise ValueError(f"seq_len must be at least {self.FIRST_SCORED + 1}, to score any position; got {seq_len}")
    return {"self": self, "num_heads": num_heads, "vocab": vocab, "seq_len": seq_len, "d_model": d_model,
            "seed": check_seed(seed)}, None


def slot_model_args(self):
    """Arguments of :class:`~mhattn.learn.several_heads.TwoSlotModel`'s methods that take none."""
    return {"self": self}, None


def slot_forward_args(self, tokens):
    """Arguments of :meth:`~mhattn.learn.several_heads.TwoSlotModel.forward`."""
    return {"self": self, "tokens": slot_tokens(self, tokens)}, None


def slot_batch_args(model, tokens, targets):
    """A model, its tokens ``(batch, seq_len)`` and the two slots' targets ``(2, batch, seq_len)``."""
    model = model_like(model, "TwoSlotModel")
    tokens = slot_tokens(model, tokens)
    return {"model": model, "tokens": tokens,
            "targets": int_array("targets", targets, (2,) + tokens.shape, model.vocab)}, None


def two_slot_batch_args(rng, batch_size, vocab, seq_len):
    return {"rng": rng_value("rng", rng), "batch_size": positive_int("batch_size", batch_size),
            "vocab": positive_int("vocab", vocab), "seq_len": positive_int("seq_len", seq_len)}, None


def streams_args(seed):
    return {"seed": check_seed(seed)}, None


def heads_train_args(num_heads, seed, steps, batch_size, lr, threads):
    """Arguments of :func:`mhattn.learn.several_heads.train` (``num_heads`` is checked by the model's layer)."""
    return {"num_heads": num_heads, "seed": check_seed(seed), "steps": positive_int("steps", steps),
            "batch_size": positive_int("batch_size", batch_size), "lr": learning_rate(lr),
            "threads": positive_int("threads", threads)}, None


def evaluation_batch_args(seed, num_sequences, vocab, seq_len):
    return {"seed": check_seed(seed), "num_sequences": positive_int("num_sequences", num_sequences),
            "vocab": positive_int("vocab", vocab), "seq_len": positive_int("seq_len", seq_len)}, None


def offset_profile_args(weights, max_offset):
    weights = attention_weights(weights)
    return {"weights": weights, "max_offset": index("max_offset", max_offset, weights.shape[-1])}, None


def model_tokens_args(model, tokens):
    model = model_like(model, "TwoSlotModel")
    return {"model": model, "tokens": slot_tokens(model, tokens)}, None


def logits_with_weights_args(model, tokens, weights):
    arguments, _ = model_tokens_args(model, tokens)
    model, tokens = arguments["model"], arguments["tokens"]
    weights = real("weights", weights, 4, "(batch, num_heads, seq_len, seq_len)")
    expected = (len(tokens), model.num_heads, model.seq_len, model.seq_len)
    if weights.shape != expected:
        raise ValueError(f"weights must have shape (batch, num_heads, seq_len, seq_len) = {expected}; "
                         f"got {weights.shape}")
    return arguments | {"weights": weights}, None


def without_heads_args(model, heads):
    model = model_like(model, "TwoSlotModel")
    return {"model": model, "heads": head_indices(heads, model.num_heads)}, None


def experiment_args(head_counts, seeds, num_sequences, steps, batch_size, lr, threads):
    """Arguments of :func:`mhattn.learn.head_probes.experiment`: head counts, seeds, and the training settings."""
    seeds = counts("seeds", seeds)
    if not all(0 <= s < 2**32 for s in seeds):
        raise ValueError(f"seeds must be ints in [0, 2**32 - 1]; got {seeds}")
    training, _ = heads_train_args(None, 0, steps, batch_size, lr, threads)
    return {"head_counts": tuple(positive_int("head_counts", h) for h in counts("head_counts", head_counts)),
            "seeds": seeds, "num_sequences": positive_int("num_sequences", num_sequences),
            **{name: training[name] for name in ("steps", "batch_size", "lr", "threads")}}, None
