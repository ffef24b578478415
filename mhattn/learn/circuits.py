r"""What a trained head does, measured the way the interpretability literature measures it.

Attention patterns (from :meth:`InductionModel.forward`):

- :func:`previous_token_score`: the weight a query puts on the token just before it;
- :func:`prefix_matching_score` (Olsson et al. 2022): the weight a query puts on every token
  that followed an earlier occurrence of the query's own token.

Weights alone (Elhage et al. 2021), with :math:`W_E` the embedding, :math:`W_U` the
unembedding and, for head :math:`h`, :math:`W_Q^h, W_K^h, W_V^h` its ``d_k`` columns of
``W_qkv`` and :math:`W_O^h` its ``d_k`` rows of ``W_o`` (row-vector convention, ``x @ W``):

- :func:`ov_circuit` :math:`W_E W_V^h W_O^h W_U` and :func:`copying_score`, from its eigenvalues;
- :func:`qk_circuit` :math:`W_E W_Q^h W_K^{h\top} W_E^\top`, optionally with the keys read
  through an earlier head's OV circuit;
- :func:`composition_score` and :func:`k_composition_scores`.

Loss: :func:`in_context_learning_score` (Olsson et al. 2022).
:func:`measure` computes all of them for a model on fresh sequences.

References: Elhage et al. (2021), *A Mathematical Framework for Transformer Circuits*,
https://transformer-circuits.pub/2021/framework/index.html. Olsson et al. (2022),
*In-context Learning and Induction Heads*, arXiv:2209.11895.
"""

import numpy as np

from ..checks import checked, learning
from ..core.attention import scaled_dot_product_attention
from ..core.heads import combine_heads
from ..core.masks import causal_mask
from ..core.projection import repeat_kv
from .task import accuracy, induction_batch, layout

# --- attention patterns --------------------------------------------------------------------


@checked(learning.previous_token_args)
def previous_token_score(weights, queries=None):
    """Per head, the mean attention weight from query ``t`` to key ``t - 1``.

    A head that always attends one token back scores 1. The average runs over every query
    with a previous token (``t >= 1``), or over those where ``queries`` is True.

    Parameters
    ----------
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
        Rows are queries, columns keys.
    queries : ndarray of bool, shape ``(batch, seq_len)``, optional
        Which queries to average over (``t = 0`` never counts).

    Returns
    -------
    ndarray of shape ``(num_heads,)``
    """
    batch, _, seq_len, _ = weights.shape
    t = np.arange(1, seq_len)  # (seq_len - 1,): queries with a previous token
    on_previous = weights[:, :, t, t - 1]  # (batch, num_heads, seq_len - 1)
    keep = np.ones((batch, seq_len), dtype=bool) if queries is None else queries
    keep = keep[:, 1:]  # (batch, seq_len - 1)
    return on_previous.transpose(1, 0, 2)[:, keep].mean(axis=-1)  # (num_heads,)


@checked(learning.segments_args)
def segments(n, seq_len, offset=0, gap=0):
    """The parts of an induction sequence as query masks: ``{name: (batch, seq_len) bool}``.

    With the first copy at ``o = offset`` and the second at ``s = o + n + gap``:
    ``"first copy"``: ``o <= t < o + n``; ``"second copy"``: ``s <= t < s + n``; ``"rest"``:
    every other position (the random tokens before, between and after the copies). ``n``,
    ``offset`` and ``gap`` are ints >= 0 or one per sequence, ``(batch,)``.
    """
    t = np.arange(seq_len)[None, :]  # (1, seq_len)
    n = np.asarray(n)[:, None]  # (batch, 1)
    batch = n.shape[0]
    first = (np.zeros(batch, dtype=np.int64) + np.asarray(offset))[:, None]  # (batch, 1)
    second = first + n + (np.zeros(batch, dtype=np.int64) + np.asarray(gap))[:, None]  # (batch, 1)
    in_first, in_second = (t >= first) & (t < first + n), (t >= second) & (t < second + n)
    return {"first copy": in_first, "second copy": in_second, "rest": ~(in_first | in_second)}


@checked(learning.prefix_matching_args)
def prefix_matching_score(weights, tokens):
    r"""Per head, the prefix-matching score of Olsson et al. (2022).

    For a query at ``t``, the credited keys are every ``j <= t`` whose predecessor is the
    query's own token, ``tokens[j - 1] == tokens[t]``: the tokens that followed an earlier
    occurrence of the current token, where an induction head looks. The score is the weight
    on those keys, summed per query and averaged over the queries that have at least one. On
    sequences of repeated random tokens (:func:`repeated_random_tokens`), an ideal induction
    head scores 1.

    Parameters
    ----------
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
    tokens : ndarray of int, shape ``(batch, seq_len)``

    Returns
    -------
    ndarray of shape ``(num_heads,)``
    """
    seq_len = tokens.shape[1]
    after = np.zeros(tokens.shape, dtype=tokens.dtype)  # (batch, seq_len): the token before each key
    after[:, 1:] = tokens[:, :-1]
    credited = after[:, None, :] == tokens[:, :, None]  # (batch, query, key): key j follows the query's token
    credited &= np.tri(seq_len, dtype=bool)  # key j <= t
    credited[:, :, 0] = False  # key 0 follows nothing
    has_any = credited.any(axis=-1)  # (batch, seq_len)
    if not has_any.any():
        raise ValueError("tokens must repeat at least one token, or no query has a key to credit")
    per_query = (weights * credited[:, None]).sum(axis=-1)  # (batch, num_heads, seq_len)
    return per_query.transpose(1, 0, 2)[:, has_any].mean(axis=-1)  # (num_heads,)


@checked(learning.repeated_tokens_args)
def repeated_random_tokens(rng, batch_size, half_len, vocab):
    """Random tokens, repeated once: the sequences Olsson et al. (2022) score heads on.

    The first half draws ``half_len`` different tokens (without replacement, so every query
    in the second half has exactly one earlier occurrence); the second half repeats it.

    Returns
    -------
    ndarray of int, shape ``(batch_size, 2 * half_len)``
    """
    first = rng.permuted(np.tile(np.arange(vocab), (batch_size, 1)), axis=1)[:, :half_len]  # (batch, half_len)
    return np.concatenate([first, first], axis=1)  # (batch, 2 * half_len)


# --- circuits from the weights -------------------------------------------------------------


@checked(learning.head_args)
def head_weights(model, layer, head):
    """One head's slices: ``W_Q, W_K, W_V`` of shape ``(d_model, d_k)`` and ``W_O`` of shape ``(d_k, d_model)``.

    Read through :meth:`mhattn.MultiHeadAttention.head_weights`, the one accessor of the
    ``W_qkv`` layout. ``layer`` and ``head`` are indices from 0 (no negative index counts
    from the end).
    """
    return model.layers[layer].head_weights(head)


@checked(learning.head_args)
def ov_circuit(model, layer, head):
    r"""The OV circuit :math:`W_E W_V^h W_O^h W_U` (Elhage et al. 2021), shape ``(vocab, vocab)``.

    Row ``i``, column ``j``: how much attending to token ``i`` raises the logit of token
    ``j``, through this head alone. A copying head has a large positive diagonal.
    """
    _, _, W_v, W_o = head_weights(model, layer, head)
    return model.embed @ W_v @ W_o @ model.unembed  # (vocab, vocab)


@checked(learning.qk_args)
def qk_circuit(model, layer, head, key_through=None):
    r"""The QK circuit: attention scores between tokens, shape ``(vocab, vocab)``.

    Without ``key_through``, :math:`W_E W_Q^h W_K^{h\top} W_E^\top / \sqrt{d_k}` (Elhage et al.
    2021): row = the query's token, column = the key's token. With ``key_through = (layer0,
    head0)``, the keys are read through that earlier head's OV circuit,
    :math:`W_E W_Q^h W_K^{h\top} (W_E W_V^{h_0} W_O^{h_0})^\top / \sqrt{d_k}`: column ``j`` is
    the token the earlier head moved into the key's position (for a previous-token head,
    the key's predecessor). This is the path that K-composition measures.
    """
    W_q, W_k, _, _ = head_weights(model, layer, head)
    keys = model.embed  # (vocab, d_model)
    if key_through is not None:
        _, _, W_v0, W_o0 = head_weights(model, *key_through)
        keys = model.embed @ W_v0 @ W_o0  # (vocab, d_model): what the earlier head writes for each token
    return (model.embed @ W_q) @ (keys @ W_k).T / np.sqrt(W_q.shape[1])  # (vocab, vocab)


@checked(learning.copying_args)
def copying_score(ov):
    r"""Copying score of an OV circuit (Elhage et al. 2021): :math:`\sum_i \lambda_i / \sum_i |\lambda_i|`.

    The :math:`\lambda_i` are the eigenvalues of the square matrix ``ov``. Positive
    eigenvalues mean that attending to a token raises that token's own logit (a copying
    head); the score is 1 for a matrix with only positive eigenvalues and -1 for only negative.

    Parameters
    ----------
    ov : ndarray of shape ``(vocab, vocab)``

    Returns
    -------
    float in ``[-1, 1]``
    """
    score = _copying_or_nan(ov)
    if np.isnan(score):  # a zero matrix (a head that writes nothing), or a nilpotent one
        raise ValueError("ov has only zero eigenvalues (a head that writes nothing?): its copying score is 0 / 0")
    return score


@checked(learning.composition_args)
def composition_score(left, right):
    r"""Composition score (Elhage et al. 2021): :math:`\|AB\|_F / (\|A\|_F \|B\|_F)`.

    ``left`` is the earlier head's matrix and ``right`` the later head's, both acting on row
    vectors (``x @ left @ right``). Independent random matrices score near
    :math:`1/\sqrt{d}`; a product that keeps all of both scores up to 1. A zero matrix (a
    head that writes nothing) has no score: ``ValueError``.
    """
    return float(np.linalg.norm(left @ right) / (np.linalg.norm(left) * np.linalg.norm(right)))


@checked(learning.k_composition_args)
def k_composition_scores(model, layer0=0, layer1=1):
    r"""K-composition of every head of ``layer0`` into every head of ``layer1``: ``(num_heads, num_heads)``.

    Entry ``[h0, h1]`` is :func:`composition_score` of :math:`W_{OV}^{h_0} = W_V^{h_0} W_O^{h_0}`
    with :math:`W_{QK}^{h_1\top} = W_K^{h_1} W_Q^{h_1\top}`: how much of what head ``h0`` writes
    is read by head ``h1``'s keys. Elhage et al. (2021) write it
    :math:`\|W_{QK}^{h_1} W_{OV}^{h_0}\|_F / (\|W_{QK}^{h_1}\|_F \|W_{OV}^{h_0}\|_F)` for column
    vectors; TransformerLens' ``all_composition_scores("K")`` computes the same in our
    row-vector convention.
    """
    return _k_composition(model, layer0, layer1, dead=None)


def _k_composition(model, layer0, layer1, dead):
    """The K-composition table; a head that writes or reads nothing raises, or gets ``dead`` if it is not None."""
    table = np.zeros((model.num_heads, model.num_heads))
    for h0 in range(model.num_heads):
        _, _, W_v, W_o = head_weights(model, layer0, h0)
        for h1 in range(model.num_heads):
            W_q, W_k, _, _ = head_weights(model, layer1, h1)
            ov, qk = W_v @ W_o, W_k @ W_q.T
            for layer, head, matrix in ((layer0, h0, ov), (layer1, h1, qk)):
                if not np.abs(matrix).max() > 0 and dead is None:
                    raise ValueError(f"head {head} of layer {layer} is dead (its {'OV' if matrix is ov else 'QK'} "
                                     "matrix is zero): it has no composition score")
            zero = not (np.abs(ov).max() > 0 and np.abs(qk).max() > 0)
            table[h0, h1] = dead if zero else composition_score(ov, qk)
    return table


# --- loss ------------------------------------------------------------------------------------


@checked(learning.token_loss_args)
def token_losses(logits, tokens):
    """Cross-entropy of each next token: ``(batch, seq_len - 1)``, entry ``t`` for token ``t + 1``."""
    shifted = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)  # (batch, seq_len - 1, vocab)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)[..., 0]  # (batch, seq_len - 1)


@checked(learning.icl_args)
def in_context_learning_score(logits, tokens, early, late):
    """In-context learning score (Olsson et al. 2022): mean loss of token ``late`` minus that of token ``early``.

    Olsson et al. take token 500 minus token 50 of a 512-token context: negative when the
    model predicts later tokens better, because it uses what came before. Tokens are counted
    from 0; token ``k`` is predicted at position ``k - 1``.

    Parameters
    ----------
    logits : ndarray of shape ``(batch, seq_len, vocab)``
    tokens : ndarray of int, shape ``(batch, seq_len)``
    early, late : int
        Token indices in ``[1, seq_len)``.
    """
    losses = token_losses(logits, tokens)  # (batch, seq_len - 1)
    return float(losses[:, late - 1].mean() - losses[:, early - 1].mean())


@checked(learning.icl_tokens_args)
def mid_context_token(max_len):
    """The token halfway through the context, ``max_len // 2`` (16 of 32): between :func:`icl_tokens`' two."""
    return max_len // 2


@checked(learning.induction_loss_args)
def induction_loss(logits, tokens):
    """Mean loss of the predictable half of repeated random tokens (:func:`repeated_random_tokens`).

    With halves of ``h`` tokens, tokens ``h + 1 .. 2h - 1`` repeat what followed an earlier
    occurrence of their predecessor; a model that copies predicts them with loss near 0, one
    that does not stays near ``log(vocab)``. Unlike the in-context learning score, which
    compares two tokens of the training distribution, this is a probe built to reward
    copying, on sequences the model never trained on.
    """
    half = tokens.shape[1] // 2
    return float(token_losses(logits, tokens)[:, half:].mean())


@checked(learning.icl_tokens_args)
def icl_tokens(max_len):
    """Olsson et al.'s tokens 50 and 500 of 512, scaled to ``max_len >= 3``: ``(early, late)``, 3 and 31 for 32.

    Always ``1 <= early < late < max_len``.
    """
    return max(1, round(max_len * 50 / 512)), min(round(max_len * 500 / 512), max_len - 1)


# --- everything at once ----------------------------------------------------------------------

INDUCTION_HEAD = 0.3  #: a layer-1 head with prefix-matching score at least this is called an induction head
PREVIOUS_TOKEN_HEAD = 0.25  #: a layer-0 head with previous-token score (all positions) at least this


@checked(learning.measure_args)
def measure(model, *, num_sequences=512, seed=2024):
    """Every measurement of the chapter for ``model``, on fresh random sequences.

    Returns
    -------
    dict
        ``accuracy`` (the determined positions of :func:`induction_batch` sequences);
        per layer (lists): ``previous_token`` ``(num_heads,)``, ``previous_token_by_segment``
        (dict of ``(num_heads,)``), ``prefix_matching`` (on repeated random tokens),
        ``copying``; ``icl_score`` (on repeated random tokens); ``previous_token_heads``,
        ``induction_heads``; ``k_composition`` ``(num_heads, num_heads)`` and
        ``k_composition_chance`` (mean and sd of :func:`composition_baseline`) (two layers or
        more); ``accuracy_without_key_path`` (:func:`forward_without_key_path`, two layers);
        ablated accuracies ``accuracy_without_previous_token_heads``,
        ``accuracy_without_induction_heads``, ``accuracy_without_layer0``,
        ``accuracy_without_head`` (per last-layer head), ``accuracy_without_positions``.
        A dead head (one whose OV circuit, or QK matrix, is zero) has a copying and a
        K-composition score of NaN: it copies nothing and composes with nothing.
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
        "copying": [np.array([_copying_or_nan(ov_circuit(model, i, h)) for h in range(model.num_heads)])
                    for i in range(len(model.layers))],
        "icl_score": in_context_learning_score(repeated_logits, repeated, *icl_tokens(repeated.shape[1])),
        "previous_token_heads": [],
        "induction_heads": [],
    }
    if last >= 1:
        previous = [int(h) for h in np.flatnonzero(result["previous_token"][0] >= PREVIOUS_TOKEN_HEAD)]
        induction = [int(h) for h in np.flatnonzero(result["prefix_matching"][last] >= INDUCTION_HEAD)]
        result["previous_token_heads"], result["induction_heads"] = previous, induction
        result["k_composition"] = _k_composition(model, 0, 1, dead=np.nan)
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


def _copying_or_nan(ov):
    """:func:`copying_score`, or NaN for a head whose OV circuit has no nonzero eigenvalue (it copies nothing)."""
    eigenvalues = np.linalg.eigvals(ov)  # complex in general; they come in conjugate pairs
    total = np.abs(eigenvalues).sum()
    return float(eigenvalues.sum().real / total) if total > 0 else float("nan")


@checked(learning.claims_args)
def claims(result):
    """The chapter's claims about a trained two-layer model, each True or False: ``{claim: bool}``."""
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


# --- where the repeat sits: accuracy, position profile, prefix matching by offset -------------


@checked(learning.offset_accuracy_args, results_finite=False)  # NaN: a cell whose repeat does not fit
def offset_accuracy(model, lengths=range(4, 13), *, per_cell=256, seed=11, gap=0):
    """Accuracy on the second copy for every block length and every offset that fits: ``(lengths, offsets)``.

    Cell ``[i, o]``: ``per_cell`` fresh sequences (:func:`mhattn.learn.task.layout`) with a block
    of ``lengths[i]`` distinct tokens after ``o`` random ones, repeated after ``gap`` more.
    Offsets run from 0 to ``max_len - 2 * min(lengths) - gap``; a cell whose repeat does not fit
    is NaN.
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


@checked(learning.gap_accuracy_args)
def gap_accuracy(model, gaps=range(2, 9), lengths=range(4, 13), *, num_sequences=1024, seed=12):
    """Accuracy per gap: ``{gap: accuracy}`` on fresh sequences, ``num_sequences`` per gap.

    Each sequence's block length is drawn uniformly from ``lengths`` (shortened where the gap
    leaves no room for it and its repeat), its offset uniformly from those that fit.
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


@checked(learning.previous_token_profile_args, results_finite=False)  # NaN at position 0
def previous_token_profile(model, layer=0, *, num_sequences=1024, seed=13, at_start=False):
    """The weight each head of ``layer`` puts on ``t - 1``, per query position ``t``: ``(num_heads, max_len)``.

    Averaged over fresh training sequences (:func:`induction_batch`, or its ``at_start`` layout);
    position 0 has no previous token and is NaN.
    """
    rng = np.random.default_rng(seed)
    tokens = induction_batch(rng, num_sequences, vocab=model.vocab, max_len=model.max_len, at_start=at_start)[0]
    weights = model.forward(tokens)[1][layer]  # (batch, num_heads, max_len, max_len)
    t = np.arange(1, model.max_len)
    profile = np.full((model.num_heads, model.max_len), np.nan)
    profile[:, 1:] = weights[:, :, t, t - 1].mean(axis=0)
    return profile


@checked(learning.offset_repeats_args)
def offset_repeats(rng, batch_size, offset, half_len, vocab):
    """``offset`` random tokens, then :func:`repeated_random_tokens`; the first ``offset + half_len`` all distinct."""
    first = rng.permuted(np.tile(np.arange(vocab), (batch_size, 1)), axis=1)[:, : offset + half_len]
    return np.concatenate([first, first[:, offset:]], axis=1)  # (batch, offset + 2 * half_len)


@checked(learning.prefix_matching_by_offset_args)
def prefix_matching_by_offset(model, layer=1, *, half_len=8, num_sequences=256, seed=14):
    """Prefix-matching score per offset and head: ``(offsets, num_heads)``, offsets ``0 .. max_len - 2 half_len``.

    Row ``o``: :func:`prefix_matching_score` on :func:`offset_repeats` sequences, ``half_len``
    repeated random tokens after ``o`` random tokens that occur nowhere else.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for o in range(model.max_len - 2 * half_len + 1):
        tokens = offset_repeats(rng, num_sequences, o, half_len, model.vocab)
        rows.append(prefix_matching_score(model.forward(tokens)[1][layer], tokens))
    return np.array(rows)


# --- composition against chance, and a path ablation --------------------------------------------


@checked(learning.composition_scores_args)
def composition_scores(model, kind, layer0=0, layer1=1):
    r"""Q-, K- or V-composition of every head of ``layer0`` into every head of ``layer1``: ``(num_heads, num_heads)``.

    The earlier head's :math:`W_{OV} = W_V W_O` against the later head's matrix that reads
    the residual stream: for ``"K"`` :math:`W_K W_Q^\top` (what its keys read), for ``"Q"``
    :math:`W_Q W_K^\top` (its queries), for ``"V"`` :math:`W_V W_O` (its values), as in
    Elhage et al. (2021). ``"K"`` equals :func:`k_composition_scores`.
    """
    table = np.zeros((model.num_heads, model.num_heads))
    for h0 in range(model.num_heads):
        _, _, W_v0, W_o0 = head_weights(model, layer0, h0)
        for h1 in range(model.num_heads):
            W_q, W_k, W_v, W_o = head_weights(model, layer1, h1)
            reader = {"K": W_k @ W_q.T, "Q": W_q @ W_k.T, "V": W_v @ W_o}[kind]
            table[h0, h1] = composition_score(W_v0 @ W_o0, reader)
    return table


@checked(learning.composition_baseline_args)
def composition_baseline(d_model, rank, *, draws=2000, seed=0):
    """Mean and standard deviation of :func:`composition_score` for two independent random rank-``rank`` maps.

    Each map is ``A @ B`` with ``A`` ``(d_model, rank)`` and ``B`` ``(rank, d_model)`` of
    independent standard normals: what a score means when nothing was learned.
    """
    rng = np.random.default_rng(seed)

    def low_rank():
        return rng.standard_normal((d_model, rank)) @ rng.standard_normal((rank, d_model))

    scores = np.array([composition_score(low_rank(), low_rank()) for _ in range(draws)])
    return float(scores.mean()), float(scores.std())


@checked(learning.key_path_args)
def forward_without_key_path(model, tokens, heads):
    """Logits of a two-layer model whose layer 1 reads its *keys* without the output of layer-0 ``heads``.

    Layer 1's queries and values, and the unembedding, see the whole residual stream; only
    the key projection sees it less the listed heads' output. If layer 1 finds the earlier
    copy by K-composition with those heads, this alone breaks the copy.

    Parameters
    ----------
    model : InductionModel with two layers
    tokens : ndarray of int, shape ``(batch, seq_len)``
    heads : list of int, heads of layer 0

    Returns
    -------
    ndarray of shape ``(batch, seq_len, vocab)``
    """
    seq_len = tokens.shape[-1]
    mask = causal_mask(seq_len)  # (seq_len, seq_len)
    h0 = model.embed[tokens] + model.pos[:seq_len]  # (batch, seq_len, d_model)
    kept = model.ablated_layers([(0, h) for h in heads])[0]
    without = h0 + kept(h0, mask)[0]  # the stream less the listed heads' output
    h1 = h0 + model.layers[0](h0, mask)[0]  # the whole stream
    layer = model.layers[1]
    Q, _, V = _project(layer, h1)  # (batch, num_heads, seq_len, d_k): queries and values read everything
    _, K, _ = _project(layer, without)  # the keys read the stream less the listed heads
    K, V = repeat_kv(K, V, layer.num_heads // layer.num_kv_heads)  # (batch, num_heads, seq_len, d_k) each
    out = combine_heads(scaled_dot_product_attention(Q, K, V, mask)[0]) @ layer.weights(h1.dtype)[1]
    return (h1 + out) @ model.unembed  # (batch, seq_len, vocab)


def _project(layer, x):
    """Queries, keys and values of every head of ``layer`` for the stream ``x``, as its own forward makes them.

    The layer's own projection, rotation (RoPE) included: ``(batch, heads, seq_len, d_k)`` each.
    """
    return layer.project(x, layer.weights(x.dtype)[0])


# --- losses on the training distribution ---------------------------------------------------------


@checked(learning.loss_report_args)
def loss_report(model, *, num_sequences=1024, seed=15):
    """The ICL score where Olsson et al. compute it, on the training distribution, and the induction loss.

    Returns a dict: ``token_loss`` (mean loss of the early, mid-context and late tokens of
    :func:`icl_tokens` and :func:`mid_context_token` on fresh :func:`induction_batch`
    sequences), ``icl_score`` (late minus early there), ``induction_loss``
    (:func:`induction_loss` on repeated random tokens) and ``repeated_icl_score`` (late minus
    early on those). The repeated tokens fill the context with two halves of distinct tokens, so
    the model's ``max_len`` must be even and at most twice its ``vocab``.
    """
    rng = np.random.default_rng(seed)
    tokens = induction_batch(rng, num_sequences, vocab=model.vocab, max_len=model.max_len)[0]
    losses = token_losses(model.forward(tokens)[0], tokens)
    early, late = icl_tokens(model.max_len)
    picked = [early, mid_context_token(model.max_len), late]
    repeated = repeated_random_tokens(rng, num_sequences, model.max_len // 2, model.vocab)
    repeated_logits = model.forward(repeated)[0]
    return {
        "token_loss": np.array([losses[:, k - 1].mean() for k in picked]),
        "icl_score": float(losses[:, late - 1].mean() - losses[:, early - 1].mean()),
        "induction_loss": induction_loss(repeated_logits, repeated),
        "repeated_icl_score": in_context_learning_score(repeated_logits, repeated, early, late),
    }
