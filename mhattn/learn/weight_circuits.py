r"""What a head does, read from its weights alone: the QK and OV circuits, copying and composition.

Elhage et al. (2021) read an attention-only transformer through products of its weights. With
:math:`W_E` the embedding, :math:`W_U` the unembedding and, for head :math:`h`,
:math:`W_Q^h, W_K^h, W_V^h` its ``d_k`` columns of ``W_qkv`` and :math:`W_O^h` its ``d_k``
rows of ``W_o`` (:func:`head_weights`; row-vector convention, ``x @ W``):

- :func:`ov_circuit` :math:`W_E W_V^h W_O^h W_U`: what attending to a token does to the logits;
  :func:`copying_score`, from its eigenvalues: whether that raises the token's own logit;
- :func:`qk_circuit` :math:`W_E W_Q^h W_K^{h\top} W_E^\top`: which tokens attend to which,
  optionally with the keys read through an earlier head's OV circuit;
- :func:`composition_score` :math:`\|AB\|_F / (\|A\|_F \|B\|_F)`, and per pair of heads
  :func:`composition_scores` (Q-, K- and V-composition) and :func:`k_composition_scores`;
  :func:`composition_baseline` says what a score is worth when nothing was learned, and
  :func:`composition_ceiling` (per pair, :func:`composition_ceilings`) how high it can go.

Notebook 09 teaches them. A head that writes nothing (a zero OV circuit) copies nothing and
composes with nothing: its scores here are NaN. References: Elhage et al. (2021), *A
Mathematical Framework for Transformer Circuits*,
https://transformer-circuits.pub/2021/framework/index.html; Olsson et al. (2022), *In-context
Learning and Induction Heads*, arXiv:2209.11895.
"""

import numpy as np

from ..core.projection import head_weights as layer_head_weights


def head_weights(model, layer, head):
    """One head's slices: ``W_Q, W_K, W_V`` of shape ``(d_model, d_k)`` and ``W_O`` of shape ``(d_k, d_model)``.

    Read through :func:`mhattn.core.projection.head_weights`, the one accessor of the
    ``W_qkv`` layout. ``layer`` and ``head`` are indices from 0 (no negative index counts
    from the end).

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> [W.shape for W in head_weights(model, 1, 0)]
    [(8, 4), (8, 4), (8, 4), (4, 8)]
    """
    return layer_head_weights(model.layers[layer], head)


def ov_circuit(model, layer, head):
    r"""The OV circuit :math:`W_E W_V^h W_O^h W_U` (Elhage et al. 2021), shape ``(vocab, vocab)``.

    Row ``i``, column ``j``: how much attending to token ``i`` raises the logit of token
    ``j``, through this head alone. A copying head has a large positive diagonal.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> ov_circuit(model, 1, 0).shape
    (6, 6)
    """
    _, _, W_v, W_o = head_weights(model, layer, head)
    return model.embed @ W_v @ W_o @ model.unembed  # (vocab, vocab)


def qk_circuit(model, layer, head, key_through=None):
    r"""The QK circuit: attention scores between tokens, shape ``(vocab, vocab)``.

    Without ``key_through``, :math:`W_E W_Q^h W_K^{h\top} W_E^\top / \sqrt{d_k}` (Elhage et al.
    2021): row = the query's token, column = the key's token. With ``key_through = (layer0,
    head0)``, the keys are read through that earlier head's OV circuit,
    :math:`W_E W_Q^h W_K^{h\top} (W_E W_V^{h_0} W_O^{h_0})^\top / \sqrt{d_k}`: column ``j`` is
    the token the earlier head moved into the key's position (for a previous-token head,
    the key's predecessor). This is the path that K-composition measures.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> qk_circuit(model, 1, 0).shape
    (6, 6)
    >>> qk_circuit(model, 1, 0, key_through=(0, 1)).shape
    (6, 6)
    """
    W_q, W_k, _, _ = head_weights(model, layer, head)
    keys = model.embed  # (vocab, d_model)
    if key_through is not None:
        _, _, W_v0, W_o0 = head_weights(model, *key_through)
        keys = model.embed @ W_v0 @ W_o0  # (vocab, d_model): what the earlier head writes for each token
    return (model.embed @ W_q) @ (keys @ W_k).T / np.sqrt(W_q.shape[1])  # (vocab, vocab)


def copying_score(ov):
    r"""Copying score of an OV circuit (Elhage et al. 2021): :math:`\sum_i \lambda_i / \sum_i |\lambda_i|`.

    The :math:`\lambda_i` are the eigenvalues of the square matrix ``ov``. Positive
    eigenvalues mean that attending to a token raises that token's own logit (a copying
    head); the score is 1 for a matrix with only positive eigenvalues and -1 for only negative.
    A matrix with no nonzero eigenvalue (a head that writes nothing) has no score: NaN.

    Parameters
    ----------
    ov : ndarray of shape ``(vocab, vocab)``

    Returns
    -------
    float in ``[-1, 1]``

    Examples
    --------
    >>> copying_score(2 * np.eye(3))
    1.0
    >>> copying_score(-np.eye(3))
    -1.0
    """
    eigenvalues = np.linalg.eigvals(ov)  # complex in general; they come in conjugate pairs
    total = np.abs(eigenvalues).sum()
    return float(eigenvalues.sum().real / total) if total > 0 else float("nan")


def composition_score(left, right):
    r"""Composition score (Elhage et al. 2021): :math:`\|AB\|_F / (\|A\|_F \|B\|_F)`.

    ``left`` is the earlier head's matrix and ``right`` the later head's, both acting on row
    vectors (``x @ left @ right``). Independent random matrices score near
    :math:`1/\sqrt{d}`; a product that keeps all of both scores up to 1. A zero matrix (a
    head that writes or reads nothing) has no score: NaN.

    Examples
    --------
    >>> composition_score(np.eye(4), np.eye(4))
    0.5
    >>> one = np.outer([1.0, 0, 0, 0], [1.0, 0, 0, 0])  # rank 1: the product keeps all of it
    >>> composition_score(one, one)
    1.0
    """
    norms = np.linalg.norm(left) * np.linalg.norm(right)
    return float(np.linalg.norm(left @ right) / norms) if norms > 0 else float("nan")


def composition_scores(model, kind, layer0=0, layer1=1):
    r"""Q-, K- or V-composition of every head of ``layer0`` into every head of ``layer1``: ``(num_heads, num_heads)``.

    Entry ``[h0, h1]`` is :func:`composition_score` of the earlier head's
    :math:`W_{OV}^{h_0} = W_V^{h_0} W_O^{h_0}` with the later head's matrix that reads the
    residual stream: for ``"K"`` :math:`W_K^{h_1} W_Q^{h_1\top}` (what its keys read), for
    ``"Q"`` :math:`W_Q^{h_1} W_K^{h_1\top}` (its queries), for ``"V"`` :math:`W_V^{h_1}
    W_O^{h_1}` (its values), as in Elhage et al. (2021).

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> table = composition_scores(model, "K")
    >>> table.shape, bool(((table > 0) & (table <= 1)).all())
    ((2, 2), True)
    """
    return _pair_table(model, kind, layer0, layer1, composition_score)


def composition_ceiling(left, right):
    r"""The largest :func:`composition_score` that matrices with the singular values of ``left`` and ``right`` reach.

    With :math:`a_i` and :math:`b_i` the singular values of ``left`` and ``right`` in
    decreasing order, :math:`\|AB\|_F^2 \le \sum_i a_i^2 b_i^2` (von Neumann's trace
    inequality), with equality when the directions that ``left`` writes most are those that
    ``right`` reads most. So the score of these two matrices can reach at most
    :math:`\sqrt{\sum_i a_i^2 b_i^2} / (\|a\| \|b\|)`: the top of its scale. A reader
    of exactly the ``r`` directions that a rank-``r`` map writes, each equally, scores
    :math:`1/\sqrt{r}` (0.25 for ``r = 16``).

    Examples
    --------
    >>> composition_ceiling(np.eye(4), np.eye(4))  # reached: composition_score gives the same
    0.5
    >>> round(composition_ceiling(np.diag([3.0, 1, 0, 0]), np.diag([1.0, 1, 1, 1])), 3)  # rank 2 into all of it
    0.5
    """
    a, b = np.linalg.svd(left, compute_uv=False), np.linalg.svd(right, compute_uv=False)  # decreasing
    k = min(len(a), len(b))
    return float(np.sqrt(np.sum(a[:k] ** 2 * b[:k] ** 2)) / (np.linalg.norm(a) * np.linalg.norm(b)))


def composition_ceilings(model, kind, layer0=0, layer1=1):
    """:func:`composition_ceiling` for every pair of :func:`composition_scores`: ``(num_heads, num_heads)``.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> bool((composition_ceilings(model, "K") >= composition_scores(model, "K")).all())
    True
    """
    return _pair_table(model, kind, layer0, layer1, composition_ceiling)


def _pair_table(model, kind, layer0, layer1, score):
    """``score(W_OV of head h0 of layer0, the matrix of head h1 of layer1 that reads kind)`` per pair of heads."""
    table = np.zeros((model.num_heads, model.num_heads))
    for h0 in range(model.num_heads):
        _, _, W_v0, W_o0 = head_weights(model, layer0, h0)
        for h1 in range(model.num_heads):
            W_q, W_k, W_v, W_o = head_weights(model, layer1, h1)
            reader = {"K": W_k @ W_q.T, "Q": W_q @ W_k.T, "V": W_v @ W_o}[kind]  # (d_model, d_model)
            table[h0, h1] = score(W_v0 @ W_o0, reader)
    return table


def k_composition_scores(model, layer0=0, layer1=1):
    r"""K-composition of every head of ``layer0`` into every head of ``layer1``: ``(num_heads, num_heads)``.

    :func:`composition_scores` of kind ``"K"``: entry ``[h0, h1]`` says how much of what head
    ``h0`` writes is read by head ``h1``'s keys. Elhage et al. (2021) write it
    :math:`\|W_{QK}^{h_1} W_{OV}^{h_0}\|_F / (\|W_{QK}^{h_1}\|_F \|W_{OV}^{h_0}\|_F)` for column
    vectors; TransformerLens' ``all_composition_scores("K")`` computes the same in our
    row-vector convention.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> k_composition_scores(model).shape
    (2, 2)
    """
    return composition_scores(model, "K", layer0, layer1)


def composition_baseline(d_model, rank, *, draws=2000, seed=0):
    """Mean and standard deviation of :func:`composition_score` for two independent random rank-``rank`` maps.

    Each map is ``A @ B`` with ``A`` ``(d_model, rank)`` and ``B`` ``(rank, d_model)`` of
    independent standard normals: what a score means when nothing was learned.

    Examples
    --------
    >>> mean, sd = composition_baseline(64, 16, draws=200)
    >>> round(sd, 2), bool(abs(mean - 1 / np.sqrt(64)) < sd)  # near 1 / sqrt(d_model)
    (0.01, True)
    """
    rng = np.random.default_rng(seed)

    def low_rank():
        return rng.standard_normal((d_model, rank)) @ rng.standard_normal((rank, d_model))

    scores = np.array([composition_score(low_rank(), low_rank()) for _ in range(draws)])
    return float(scores.mean()), float(scores.std())
