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
from .task import accuracy, induction_batch

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
def segments(n, seq_len):
    """The three parts of an induction sequence as query masks: ``{name: (batch, seq_len) bool}``.

    ``"first copy"``: ``t < n``; ``"second copy"``: ``n <= t < 2n``; ``"rest"``: ``t >= 2n``.
    ``n`` is an int >= 0 or one per sequence, ``(batch,)`` (an int is a batch of one).
    """
    t = np.arange(seq_len)[None, :]  # (1, seq_len)
    n = np.asarray(n)[:, None]  # (batch, 1)
    return {"first copy": t < n, "second copy": (t >= n) & (t < 2 * n), "rest": t >= 2 * n}


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
        ``induction_heads``; ``k_composition`` ``(num_heads, num_heads)`` (two layers or more);
        ablated accuracies ``accuracy_without_previous_token_heads``,
        ``accuracy_without_induction_heads``, ``accuracy_without_layer0``,
        ``accuracy_without_head`` (per last-layer head), ``accuracy_without_positions``.
        A dead head (one whose OV circuit, or QK matrix, is zero) has a copying and a
        K-composition score of NaN: it copies nothing and composes with nothing.
    """
    rng = np.random.default_rng(seed)
    tokens, n = induction_batch(rng, num_sequences, vocab=model.vocab, max_len=model.max_len)
    logits, weights = model.forward(tokens)
    half_len = min(model.max_len // 2, model.vocab)  # the first half draws distinct tokens
    repeated = repeated_random_tokens(rng, num_sequences, half_len, model.vocab)  # (num_sequences, 2 * half_len)
    repeated_logits, repeated_weights = model.forward(repeated)
    parts = segments(n, model.max_len)
    last = len(model.layers) - 1

    def accuracy_without(heads):
        return accuracy(model.forward(tokens, ablate=heads)[0], tokens, n)

    result = {
        "accuracy": accuracy(logits, tokens, n),
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
        result["accuracy_without_layer0"] = accuracy_without([(0, None)])
        result["accuracy_without_previous_token_heads"] = accuracy_without([(0, h) for h in previous])
        result["accuracy_without_induction_heads"] = accuracy_without([(last, h) for h in induction])
    result["accuracy_without_head"] = [accuracy_without([(last, h)]) for h in range(model.num_heads)]
    result["accuracy_without_positions"] = accuracy(model.forward(tokens, use_positions=False)[0], tokens, n)
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
    return {
        "accuracy >= 0.9": acc >= 0.9,
        "best layer-1 prefix-matching score >= 0.5": bool(result["prefix_matching"][-1].max() >= 0.5),
        "every induction head copies (copying score >= 0.7)": bool(induction)
        and bool(all(result["copying"][-1][h] >= 0.7 for h in induction)),
        "each induction head K-composes most with a previous-token head": composition is not None
        and bool(induction) and all(int(composition[:, h].argmax()) in previous for h in induction),
        "ablating the previous-token heads costs >= 0.4": bool(previous)
        and acc - result["accuracy_without_previous_token_heads"] >= 0.4,
        "ablating the induction heads costs >= 0.4": bool(induction)
        and acc - result["accuracy_without_induction_heads"] >= 0.4,
    }
