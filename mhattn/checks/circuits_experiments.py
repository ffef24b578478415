"""The arguments of the causal experiments (:mod:`mhattn.learn.experiments`).

A model of the right depth and context, the heads to remove, and block lengths and gaps that
leave room for a repeat of distinct tokens: refused here, by name, before any sequence is drawn.
"""

from .learning import counts, head_indices, model_like
from .positions import count
from .values import positive_int
from .values import seed as check_seed


def key_path_args(model, tokens, heads):
    """Arguments of :func:`~mhattn.learn.experiments.forward_without_key_path`: two layers, a batch, layer-0 heads."""
    model = model_like(model)
    if len(model.layers) != 2:
        raise ValueError(f"model must have two layers; got {len(model.layers)}")
    tokens = model.check_tokens(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a batch of shape (batch, seq_len); got shape {tokens.shape}")
    return {"model": model, "tokens": tokens, "heads": head_indices(heads, model.num_heads)}, None


def path_ablation_args(model, tokens, heads, reads, method):
    """Arguments of :func:`~mhattn.learn.path_ablation.path_ablation`: a key-path batch, which reads, which method."""
    arguments, _ = key_path_args(model, tokens, heads)
    if not isinstance(reads, str) or not reads or set(reads) - set("QKV"):
        raise ValueError(f"reads must name layer 1's projections with letters of 'QKV' (e.g. 'K' or 'QK'); "
                         f"got {reads!r}")
    methods = ("zero", "mean", "resample")
    if not isinstance(method, str) or method not in methods:
        raise ValueError(f"method must be one of {methods}; got {method!r}")
    if method == "resample" and arguments["tokens"].shape[0] < 2:
        raise ValueError(f"method 'resample' takes the heads' output from another sequence: tokens must hold "
                         f"at least 2 sequences; got shape {arguments['tokens'].shape}")
    return arguments | {"reads": reads, "method": method}, None


def offset_gap_accuracy_args(model, n, per_cell, seed):
    """Arguments of :func:`~mhattn.learn.experiments.offset_gap_accuracy`: a block of ``n`` that fits twice."""
    model = model_like(model)
    n = positive_int("n", n)
    if 2 * n > model.max_len or n > model.vocab:
        raise ValueError(f"n must fit twice in max_len = {model.max_len} and hold distinct tokens of vocab = "
                         f"{model.vocab}; got n = {n}")
    return {"model": model, "n": n, "per_cell": positive_int("per_cell", per_cell), "seed": check_seed(seed)}, None


def _lengths(name, value):
    """Block lengths: a non-empty iterable of ints >= 1."""
    return tuple(positive_int(name, n) for n in counts(name, value))


def _longest_block(model, longest):
    """Raise unless ``model.vocab`` holds ``longest`` distinct tokens, the longest block drawn."""
    if longest > model.vocab:
        raise ValueError(f"lengths must not exceed the model's vocab = {model.vocab} where they fit the context "
                         f"(a block holds distinct tokens); got a block of {longest}")


def offset_accuracy_args(model, lengths, per_cell, seed, gap):
    """Arguments of :func:`~mhattn.learn.experiments.offset_accuracy`: the shortest block and its repeat fit."""
    model = model_like(model)
    lengths, gap = _lengths("lengths", lengths), count("gap", gap)
    if 2 * min(lengths) + gap > model.max_len:
        raise ValueError(f"lengths and gap must leave room for a repeat: 2 * min(lengths) + gap <= max_len = "
                         f"{model.max_len}; got min(lengths) = {min(lengths)}, gap = {gap}")
    _longest_block(model, max(n for n in lengths if 2 * n + gap <= model.max_len))
    return {"model": model, "lengths": lengths, "per_cell": positive_int("per_cell", per_cell),
            "seed": check_seed(seed), "gap": gap}, None


def gap_accuracy_args(model, gaps, lengths, num_sequences, seed):
    """Arguments of :func:`~mhattn.learn.experiments.gap_accuracy`: every gap leaves room for a block of one."""
    model = model_like(model)
    gaps, lengths = tuple(count("gaps", g) for g in counts("gaps", gaps)), _lengths("lengths", lengths)
    if max(gaps) > model.max_len - 2:
        raise ValueError(f"gaps must be in [0, max_len - 2 = {model.max_len - 2}] (room for a block of one token "
                         f"and its repeat); got {max(gaps)}")
    _longest_block(model, min(max(lengths), (model.max_len - min(gaps)) // 2))
    return {"model": model, "gaps": gaps, "lengths": lengths,
            "num_sequences": positive_int("num_sequences", num_sequences), "seed": check_seed(seed)}, None


def measure_args(model, num_sequences, seed):
    """Arguments of :func:`~mhattn.learn.experiments.measure`: a model whose context holds repeated sequences."""
    model = model_like(model)
    if model.max_len < 4:
        raise ValueError(f"model must have max_len >= 4 to be measured on repeated sequences; got max_len = "
                         f"{model.max_len}")
    return {"model": model, "num_sequences": positive_int("num_sequences", num_sequences),
            "seed": check_seed(seed)}, None


def claims_args(result):
    """Arguments of :func:`~mhattn.learn.experiments.claims`: the dict that ``measure`` returns."""
    needed = ("accuracy", "prefix_matching", "copying", "induction_heads", "previous_token_heads")
    if not isinstance(result, dict) or not all(key in result for key in needed):
        raise TypeError(f"result must be the dict that measure(model) returns (with {', '.join(needed)}); "
                        f"got {type(result).__name__}")
    return {"result": result}, None
