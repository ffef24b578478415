"""The arguments of the losses that show in-context learning (:mod:`mhattn.learn.in_context`).

Logits beside the tokens they predict, the tokens to compare, and a model whose context can
hold the sequences the losses are measured on.
"""

from .learning import int_array, model_like, real
from .values import integer, positive_int
from .values import seed as check_seed


def token_loss_args(logits, tokens):
    """Arguments of :func:`~mhattn.learn.in_context.token_losses`: logits ``(batch, seq_len, vocab)``, tokens beside."""
    logits = real("logits", logits, 3, "(batch, seq_len, vocab)")
    if logits.shape[1] < 2:
        raise ValueError(f"logits must hold at least two positions (a token to predict); got shape {logits.shape}")
    return {"logits": logits, "tokens": int_array("tokens", tokens, logits.shape[:2], logits.shape[2])}, None


def icl_args(logits, tokens, early, late):
    """Arguments of :func:`~mhattn.learn.in_context.in_context_learning_score`: two tokens in ``[1, seq_len)``."""
    arguments, _ = token_loss_args(logits, tokens)
    seq_len = arguments["logits"].shape[1]
    early, late = (_token_index(name, value, seq_len) for name, value in (("early", early), ("late", late)))
    return arguments | {"early": early, "late": late}, None


def _token_index(name, value, seq_len):
    """A token index in ``[1, seq_len)``: token 0 is predicted by nothing."""
    expected = f"an int in [1, {seq_len - 1}] (token 0 is predicted by nothing)"
    value = integer(name, value, expected)
    if not 1 <= value < seq_len:
        raise ValueError(f"{name} must be {expected}; got {value}")
    return value


def icl_tokens_args(max_len):
    """Arguments of :func:`~mhattn.learn.in_context.icl_tokens` and ``mid_context_token``: a context of three."""
    max_len = positive_int("max_len", max_len)
    if max_len < 3:
        raise ValueError(f"max_len must be >= 3, for two different tokens 1 <= early < late < max_len; got {max_len}")
    return {"max_len": max_len}, None


def induction_loss_args(logits, tokens):
    """Arguments of :func:`~mhattn.learn.in_context.induction_loss`: two halves of at least two tokens."""
    arguments, _ = token_loss_args(logits, tokens)
    seq_len = arguments["tokens"].shape[1]
    if seq_len % 2 or seq_len < 4:
        raise ValueError(f"tokens must be two halves of h >= 2 tokens each (repeated_random_tokens), shape "
                         f"(batch, 2h); got shape {arguments['tokens'].shape}")
    return arguments, None


def loss_report_args(model, num_sequences, seed):
    """Arguments of :func:`~mhattn.learn.in_context.loss_report`: a context two halves of distinct tokens fill."""
    model = model_like(model)
    if model.max_len % 2 or model.max_len < 4 or model.max_len // 2 > model.vocab:
        raise ValueError(f"model must have an even max_len >= 4 and max_len // 2 <= vocab (repeated random tokens "
                         f"fill its context with two halves of distinct tokens); got max_len = {model.max_len}, "
                         f"vocab = {model.vocab}")
    return {"model": model, "num_sequences": positive_int("num_sequences", num_sequences),
            "seed": check_seed(seed)}, None
