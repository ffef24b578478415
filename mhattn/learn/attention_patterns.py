"""What a head's attention pattern shows: the previous-token and prefix-matching scores, and their profiles.

Each measure reads attention weights, ``(batch, num_heads, seq_len, seq_len)`` with rows the
queries and columns the keys (as :meth:`mhattn.learn.model.InductionModel.forward` returns
them), and compares them with the pattern of an ideal head:

- :func:`previous_token_score`: the weight a query puts on the token just before it (a head
  that always looks one token back scores 1); :func:`segments` splits the queries of an
  induction sequence into its parts, to average over each;
- :func:`prefix_matching_score` (Olsson et al. 2022): the weight a query puts on every token
  that followed an earlier occurrence of the query's own token (an ideal induction head scores
  1), on :func:`repeated_random_tokens`, the sequences the paper scores heads on;
- :func:`previous_token_profile` and :func:`prefix_matching_by_offset`: the same two scores by
  query position and by where the repeat starts (:func:`offset_repeats`), to see whether a
  head does its job everywhere or only where training put the repeats.

Notebook 09 teaches them. References: Olsson et al. (2022), *In-context Learning and Induction
Heads*, arXiv:2209.11895; Elhage et al. (2021), *A Mathematical Framework for Transformer
Circuits*, https://transformer-circuits.pub/2021/framework/index.html.
"""

import numpy as np

from .task import induction_batch


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

    Examples
    --------
    >>> previous = np.eye(4, k=-1)
    >>> previous[0, 0] = 1.0  # query 0 can only attend to itself
    >>> uniform = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    >>> weights = np.stack([previous, uniform])[None]  # (1, 2, 4, 4): two heads
    >>> previous_token_score(weights).round(2)
    array([1.  , 0.36])
    """
    batch, _, seq_len, _ = weights.shape
    t = np.arange(1, seq_len)  # (seq_len - 1,): queries with a previous token
    on_previous = weights[:, :, t, t - 1]  # (batch, num_heads, seq_len - 1)
    keep = np.ones((batch, seq_len), dtype=bool) if queries is None else queries
    keep = keep[:, 1:]  # (batch, seq_len - 1)
    return on_previous.transpose(1, 0, 2)[:, keep].mean(axis=-1)  # (num_heads,)


def segments(n, seq_len, offset=0, gap=0):
    """The parts of an induction sequence as query masks: ``{name: (batch, seq_len) bool}``.

    With the first copy at ``o = offset`` and the second at ``s = o + n + gap``:
    ``"first copy"``: ``o <= t < o + n``; ``"second copy"``: ``s <= t < s + n``; ``"rest"``:
    every other position (the random tokens before, between and after the copies). ``n``,
    ``offset`` and ``gap`` are ints >= 0 or one per sequence, ``(batch,)``.

    Examples
    --------
    >>> parts = segments(3, 8, offset=1)
    >>> parts["second copy"].astype(int)
    array([[0, 0, 0, 0, 1, 1, 1, 0]])
    """
    t = np.arange(seq_len)[None, :]  # (1, seq_len)
    n = np.atleast_1d(n)[:, None]  # (batch, 1)
    batch = n.shape[0]
    first = (np.zeros(batch, dtype=np.int64) + np.asarray(offset))[:, None]  # (batch, 1)
    second = first + n + (np.zeros(batch, dtype=np.int64) + np.asarray(gap))[:, None]  # (batch, 1)
    in_first, in_second = (t >= first) & (t < first + n), (t >= second) & (t < second + n)
    return {"first copy": in_first, "second copy": in_second, "rest": ~(in_first | in_second)}


def prefix_matching_score(weights, tokens):
    r"""Per head, the prefix-matching score of Olsson et al. (2022).

    For a query at ``t``, the credited keys are every ``j <= t`` whose predecessor is the
    query's own token, ``tokens[j - 1] == tokens[t]``: the tokens that followed an earlier
    occurrence of the current token, where an induction head looks. The score is the weight
    on those keys, summed per query and averaged over the queries that have at least one (so
    some token must repeat). On sequences of repeated random tokens
    (:func:`repeated_random_tokens`), an ideal induction head scores 1.

    Parameters
    ----------
    weights : ndarray of shape ``(batch, num_heads, seq_len, seq_len)``
    tokens : ndarray of int, shape ``(batch, seq_len)``

    Returns
    -------
    ndarray of shape ``(num_heads,)``

    Examples
    --------
    >>> tokens = np.array([[0, 1, 2, 0, 1, 2]])
    >>> weights = np.eye(6)[[0, 1, 2, 1, 2, 3]][None, None]  # (1, 1, 6, 6): each repeat looks at what followed
    >>> prefix_matching_score(weights, tokens)
    array([1.])
    """
    seq_len = tokens.shape[1]
    after = np.zeros(tokens.shape, dtype=tokens.dtype)  # (batch, seq_len): the token before each key
    after[:, 1:] = tokens[:, :-1]
    credited = after[:, None, :] == tokens[:, :, None]  # (batch, query, key): key j follows the query's token
    credited &= np.tri(seq_len, dtype=bool)  # key j <= t
    credited[:, :, 0] = False  # key 0 follows nothing
    has_any = credited.any(axis=-1)  # (batch, seq_len)
    per_query = (weights * credited[:, None]).sum(axis=-1)  # (batch, num_heads, seq_len)
    return per_query.transpose(1, 0, 2)[:, has_any].mean(axis=-1)  # (num_heads,)


def repeated_random_tokens(rng, batch_size, half_len, vocab):
    """Random tokens, repeated once: the sequences Olsson et al. (2022) score heads on.

    The first half draws ``half_len`` different tokens (without replacement, so every query
    in the second half has exactly one earlier occurrence); the second half repeats it.

    Returns
    -------
    ndarray of int, shape ``(batch_size, 2 * half_len)``

    Examples
    --------
    >>> repeated_random_tokens(np.random.default_rng(0), 2, 3, 8)
    array([[2, 4, 3, 2, 4, 3],
           [6, 2, 7, 6, 2, 7]])
    """
    first = rng.permuted(np.tile(np.arange(vocab), (batch_size, 1)), axis=1)[:, :half_len]  # (batch, half_len)
    return np.concatenate([first, first], axis=1)  # (batch, 2 * half_len)


def offset_repeats(rng, batch_size, offset, half_len, vocab):
    """``offset`` random tokens, then :func:`repeated_random_tokens`; the first ``offset + half_len`` all distinct.

    Examples
    --------
    >>> offset_repeats(np.random.default_rng(0), 1, 2, 3, 8)
    array([[2, 4, 3, 6, 5, 3, 6, 5]])
    """
    first = rng.permuted(np.tile(np.arange(vocab), (batch_size, 1)), axis=1)[:, : offset + half_len]
    return np.concatenate([first, first[:, offset:]], axis=1)  # (batch, offset + 2 * half_len)


def previous_token_profile(model, layer=0, *, num_sequences=1024, seed=13, at_start=False):
    """The weight each head of ``layer`` puts on ``t - 1``, per query position ``t``: ``(num_heads, max_len)``.

    Averaged over fresh training sequences (:func:`induction_batch`, or its ``at_start`` layout);
    position 0 has no previous token and is NaN.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> profile = previous_token_profile(load_trained(), 0, num_sequences=8)
    >>> profile.shape
    (4, 32)
    >>> bool(np.isnan(profile[:, 0]).all())
    True
    """
    rng = np.random.default_rng(seed)
    tokens = induction_batch(rng, num_sequences, vocab=model.vocab, max_len=model.max_len, at_start=at_start)[0]
    weights = model.forward(tokens)[1][layer]  # (batch, num_heads, max_len, max_len)
    t = np.arange(1, model.max_len)
    profile = np.full((model.num_heads, model.max_len), np.nan)
    profile[:, 1:] = weights[:, :, t, t - 1].mean(axis=0)
    return profile


def prefix_matching_by_offset(model, layer=1, *, half_len=8, num_sequences=256, seed=14):
    """Prefix-matching score per offset and head: ``(offsets, num_heads)``, offsets ``0 .. max_len - 2 half_len``.

    Row ``o``: :func:`prefix_matching_score` on :func:`offset_repeats` sequences, ``half_len``
    repeated random tokens after ``o`` random tokens that occur nowhere else.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> prefix_matching_by_offset(load_trained(), 1, half_len=8, num_sequences=4).shape
    (17, 4)
    """
    rng = np.random.default_rng(seed)
    rows = []
    for o in range(model.max_len - 2 * half_len + 1):
        tokens = offset_repeats(rng, num_sequences, o, half_len, model.vocab)
        rows.append(prefix_matching_score(model.forward(tokens)[1][layer], tokens))
    return np.array(rows)
