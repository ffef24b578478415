"""Causal experiments: remove a head, or one path, and see what the model can no longer do.

A score says what a head looks like; an ablation says what the model needs it for:

- :func:`forward_without_key_path`: layer 1 reads its keys without the previous-token heads'
  output, and nothing else changes; if the copy breaks, the induction heads find the earlier
  occurrence by K-composition (Elhage et al. 2021, Olsson et al. 2022);
- :func:`offset_accuracy`, :func:`gap_accuracy`, :func:`offset_gap_accuracy`: accuracy
  wherever the repeat sits, across a gap, and over both at once, to tell a circuit that moves
  with the repeat from a shortcut that does not;
- :func:`measure`: every score of :mod:`.attention_patterns`, :mod:`.weight_circuits` and
  :mod:`.in_context` and every ablation (heads silenced through
  :meth:`~mhattn.learn.model.InductionModel.forward`'s ``ablate``) for a model at once;
  :func:`claims` turns that into the chapter's claims, each True or False.

Notebook 09 teaches them. References: Elhage et al. (2021), *A Mathematical Framework for
Transformer Circuits*, https://transformer-circuits.pub/2021/framework/index.html; Olsson et al.
(2022), *In-context Learning and Induction Heads*, arXiv:2209.11895.
"""

import numpy as np

from .attention_patterns import prefix_matching_score, previous_token_score, repeated_random_tokens, segments
from .in_context import icl_tokens, in_context_learning_score
from .path_ablation import path_ablation
from .task import accuracy, induction_batch, layout
from .weight_circuits import composition_baseline, copying_score, k_composition_scores, ov_circuit

INDUCTION_HEAD = 0.3  #: a layer-1 head with prefix-matching score at least this is called an induction head
PREVIOUS_TOKEN_HEAD = 0.25  #: a layer-0 head with previous-token score (all positions) at least this


def forward_without_key_path(model, tokens, heads):
    """Logits of a two-layer model whose layer 1 reads its *keys* without the output of layer-0 ``heads``.

    Layer 1's queries and values, and the unembedding, see the whole residual stream; only
    the key projection sees it less the listed heads' output: :func:`.path_ablation.path_ablation`
    with ``reads="K"`` and ``method="zero"``. If layer 1 finds the earlier
    copy by K-composition with those heads, this alone breaks the copy. With no head listed,
    these are the logits of :meth:`~mhattn.learn.model.InductionModel.forward`.

    Parameters
    ----------
    model : InductionModel with two layers
    tokens : ndarray of int, shape ``(batch, seq_len)``
    heads : list of int, heads of layer 0

    Returns
    -------
    ndarray of shape ``(batch, seq_len, vocab)``

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> model = load_trained()
    >>> tokens = induction_batch(np.random.default_rng(0), 2)[0]
    >>> forward_without_key_path(model, tokens, []).shape
    (2, 32, 32)
    >>> bool(np.allclose(forward_without_key_path(model, tokens, []), model(tokens)[0]))
    True
    """
    return path_ablation(model, tokens, heads, reads="K", method="zero")


def offset_accuracy(model, lengths=range(4, 13), *, per_cell=256, seed=11, gap=0):
    """Accuracy on the second copy for every block length and every offset that fits: ``(lengths, offsets)``.

    Cell ``[i, o]``: ``per_cell`` fresh sequences (:func:`mhattn.learn.task.layout`) with a block
    of ``lengths[i]`` distinct tokens after ``o`` random ones, repeated after ``gap`` more.
    Offsets run from 0 to ``max_len - 2 * min(lengths) - gap``; a cell whose repeat does not fit
    is NaN.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> table = offset_accuracy(load_trained(), range(12, 14), per_cell=4)
    >>> table.shape  # block lengths 12 and 13; offsets 0 .. 32 - 2 * 12
    (2, 9)
    >>> bool(np.isnan(table[1, -2:]).all())  # a block of 13 does not fit at offsets 7 and 8
    True
    """
    rng = np.random.default_rng(seed)
    offsets = model.max_len - 2 * min(lengths) - gap + 1
    table = np.full((len(lengths), offsets), np.nan)
    for i, n in enumerate(lengths):
        for o in range(model.max_len - 2 * n - gap + 1):
            n_, o_, g_ = (np.full(per_cell, v) for v in (n, o, gap))
            tokens = layout(rng, n_, o_, g_, vocab=model.vocab, max_len=model.max_len)
            table[i, o] = accuracy(model.forward(tokens)[0], tokens, n_, o_, g_)
    return table


def offset_gap_accuracy(model, n, *, per_cell=128, seed=11):
    """Accuracy on the second copy of a block of ``n``, for every offset and gap that fit: ``(offsets, gaps)``.

    Cell ``[o, g]``: ``per_cell`` fresh sequences (:func:`mhattn.learn.task.layout`) with the
    first copy at ``o`` and the second at ``o + n + g``; offsets and gaps run from 0 to
    ``max_len - 2 n``, and a cell with ``o + g > max_len - 2 n`` (no room) is NaN.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> table = offset_gap_accuracy(load_trained(), 14, per_cell=4)
    >>> table.shape, bool(np.isnan(table[4, 1])), bool(np.isnan(table[4, 0]))
    ((5, 5), True, False)
    """
    rng = np.random.default_rng(seed)
    room = model.max_len - 2 * n
    table = np.full((room + 1, room + 1), np.nan)
    for o in range(room + 1):
        gaps = np.repeat(np.arange(room + 1 - o), per_cell)  # (cells * per_cell,): one row of the table at once
        n_, o_ = np.full(len(gaps), n), np.full(len(gaps), o)
        tokens = layout(rng, n_, o_, gaps, vocab=model.vocab, max_len=model.max_len)
        logits = model.forward(tokens)[0]  # (cells * per_cell, max_len, vocab)
        for g in range(room + 1 - o):
            rows = gaps == g
            table[o, g] = accuracy(logits[rows], tokens[rows], n_[rows], o_[rows], gaps[rows])
    return table


def gap_accuracy(model, gaps=range(2, 9), lengths=range(4, 13), *, num_sequences=1024, seed=12):
    """Accuracy per gap: ``{gap: accuracy}`` on fresh sequences, ``num_sequences`` per gap.

    Each sequence's block length is drawn uniformly from ``lengths`` (shortened where the gap
    leaves no room for it and its repeat), its offset uniformly from those that fit.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> result = gap_accuracy(load_trained(), [2, 8], [4], num_sequences=16)
    >>> sorted(result), all(0 <= a <= 1 for a in result.values())
    ([2, 8], True)
    """
    rng = np.random.default_rng(seed)
    result = {}
    for g in gaps:
        drawn = np.asarray(lengths)[rng.integers(0, len(lengths), size=num_sequences)]  # (num_sequences,)
        n = np.minimum(drawn, (model.max_len - g) // 2)
        offset = (rng.random(num_sequences) * (model.max_len - 2 * n - g + 1)).astype(np.int64)
        gap = np.full(num_sequences, g)
        tokens = layout(rng, n, offset, gap, vocab=model.vocab, max_len=model.max_len)
        result[int(g)] = accuracy(model.forward(tokens)[0], tokens, n, offset, gap)
    return result


def measure(model, *, num_sequences=512, seed=2024):
    """Every measurement of the chapter for ``model``, on fresh random sequences.

    Returns
    -------
    dict
        ``accuracy`` (the determined positions of :func:`induction_batch` sequences);
        per layer (lists): ``previous_token`` ``(num_heads,)``, ``previous_token_by_segment``
        (dict of ``(num_heads,)``), ``prefix_matching`` (on repeated random tokens),
        ``copying``; ``repeated_icl_score`` (the in-context learning score on repeated random
        tokens; :func:`loss_report`'s ``icl_score`` is the one on the training task); ``previous_token_heads``,
        ``induction_heads``; ``k_composition`` ``(num_heads, num_heads)`` and
        ``k_composition_chance`` (mean and sd of :func:`composition_baseline`) (two layers or
        more); ``accuracy_without_key_path`` (:func:`forward_without_key_path`, two layers);
        ablated accuracies ``accuracy_without_previous_token_heads``,
        ``accuracy_without_induction_heads``, ``accuracy_without_layer0``,
        ``accuracy_without_head`` (per last-layer head), ``accuracy_without_positions``.
        A dead head (one whose OV circuit, or QK matrix, is zero) has a copying and a
        K-composition score of NaN: it copies nothing and composes with nothing.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> result = measure(load_trained(), num_sequences=8)
    >>> result["previous_token"][0].shape, result["k_composition"].shape
    ((4,), (4, 4))
    >>> result["accuracy"] > 0.9
    True
    """
    rng = np.random.default_rng(seed)
    tokens, n, offset, gap = induction_batch(rng, num_sequences, vocab=model.vocab, max_len=model.max_len)
    logits, weights = model.forward(tokens)
    half_len = min(model.max_len // 2, model.vocab)  # the first half draws distinct tokens
    repeated = repeated_random_tokens(rng, num_sequences, half_len, model.vocab)  # (num_sequences, 2 * half_len)
    repeated_logits, repeated_weights = model.forward(repeated)
    parts = segments(n, model.max_len, offset, gap)
    last = len(model.layers) - 1

    def accuracy_without(heads):
        return accuracy(model.forward(tokens, ablate=heads)[0], tokens, n, offset, gap)

    result = {
        "accuracy": accuracy(logits, tokens, n, offset, gap),
        "previous_token": [previous_token_score(w) for w in weights],
        "previous_token_by_segment": [{k: previous_token_score(w, q) for k, q in parts.items()} for w in weights],
        "prefix_matching": [prefix_matching_score(w, repeated) for w in repeated_weights],
        "copying": [np.array([copying_score(ov_circuit(model, i, h)) for h in range(model.num_heads)])
                    for i in range(len(model.layers))],
        "repeated_icl_score": in_context_learning_score(repeated_logits, repeated, *icl_tokens(repeated.shape[1])),
        "previous_token_heads": [],
        "induction_heads": [],
    }
    if last >= 1:
        previous = [int(h) for h in np.flatnonzero(result["previous_token"][0] >= PREVIOUS_TOKEN_HEAD)]
        induction = [int(h) for h in np.flatnonzero(result["prefix_matching"][last] >= INDUCTION_HEAD)]
        result["previous_token_heads"], result["induction_heads"] = previous, induction
        result["k_composition"] = k_composition_scores(model, 0, 1)
        result["k_composition_chance"] = composition_baseline(
            model.d_model, model.d_model // model.num_heads, draws=500, seed=0)
        if len(model.layers) == 2:
            cut = forward_without_key_path(model, tokens, previous)
            result["accuracy_without_key_path"] = accuracy(cut, tokens, n, offset, gap)
        result["accuracy_without_layer0"] = accuracy_without([(0, None)])
        result["accuracy_without_previous_token_heads"] = accuracy_without([(0, h) for h in previous])
        result["accuracy_without_induction_heads"] = accuracy_without([(last, h) for h in induction])
    result["accuracy_without_head"] = [accuracy_without([(last, h)]) for h in range(model.num_heads)]
    without_positions = model.forward(tokens, use_positions=False)[0]
    result["accuracy_without_positions"] = accuracy(without_positions, tokens, n, offset, gap)
    return result


def claims(result):
    """The chapter's claims about a trained two-layer model, each True or False: ``{claim: bool}``.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> result = measure(load_trained(), num_sequences=8)
    >>> checked = claims(result)
    >>> len(checked), all(checked.values())
    (7, True)
    """
    acc = result["accuracy"]
    induction, previous = result["induction_heads"], result["previous_token_heads"]
    composition = result.get("k_composition")
    chance_mean, chance_sd = result.get("k_composition_chance", (np.nan, np.nan))
    return {
        "accuracy >= 0.9": acc >= 0.9,
        "best layer-1 prefix-matching score >= 0.5": bool(result["prefix_matching"][-1].max() >= 0.5),
        "every induction head copies (copying score >= 0.7)": bool(induction)
        and bool(all(result["copying"][-1][h] >= 0.7 for h in induction)),
        "each induction head K-composes with a previous-token head above chance + 3 sd": composition is not None
        and bool(induction) and bool(previous) and all(composition[previous, h].max() > chance_mean + 3 * chance_sd
                                                       for h in induction),
        "removing the previous-token heads from layer 1's keys alone costs >= 0.3":
        "accuracy_without_key_path" in result and acc - result["accuracy_without_key_path"] >= 0.3,
        "ablating the previous-token heads costs >= 0.4": bool(previous)
        and acc - result["accuracy_without_previous_token_heads"] >= 0.4,
        "ablating the induction heads costs >= 0.4": bool(induction)
        and acc - result["accuracy_without_induction_heads"] >= 0.4,
    }
