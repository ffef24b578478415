"""Losses that show in-context learning: the loss of each token, the ICL score, the induction loss.

A model that uses its context predicts later tokens better than early ones:

- :func:`token_losses`: the cross-entropy of every next token;
- :func:`in_context_learning_score` (Olsson et al. 2022): the loss of a late token minus that of
  an early one, negative when the context helps; :func:`icl_tokens` scales the paper's tokens 50
  and 500 of 512 to a shorter context, :func:`mid_context_token` names one between them;
- :func:`induction_loss`: the loss of the predictable half of repeated random tokens, a probe
  built to reward copying;
- :func:`loss_report`: all of them for a model, on fresh sequences.

Notebook 09 teaches them. Reference: Olsson et al. (2022), *In-context Learning and Induction
Heads*, arXiv:2209.11895 (the in-context learning score of its section 2).
"""

import numpy as np

from .attention_patterns import repeated_random_tokens
from .task import induction_batch


def token_losses(logits, tokens):
    """Cross-entropy of each next token: ``(batch, seq_len - 1)``, entry ``t`` for token ``t + 1``.

    Examples
    --------
    >>> tokens = np.array([[0, 1, 2, 3]])
    >>> logits = np.zeros((1, 4, 5))  # uniform over 5 tokens: every loss is log 5
    >>> token_losses(logits, tokens).round(3)
    array([[1.609, 1.609, 1.609]])
    """
    shifted = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)  # (batch, seq_len - 1, vocab)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, tokens[:, 1:, None], axis=-1)[..., 0]  # (batch, seq_len - 1)


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

    Examples
    --------
    >>> tokens = np.array([[0, 1, 0, 1]])
    >>> logits = np.zeros((1, 4, 2))
    >>> logits[0, 2, 1] = 5.0  # position 2 is sure of token 3
    >>> round(in_context_learning_score(logits, tokens, 1, 3), 2)
    -0.69
    """
    losses = token_losses(logits, tokens)  # (batch, seq_len - 1)
    return float(losses[:, late - 1].mean() - losses[:, early - 1].mean())


def icl_tokens(max_len):
    """Olsson et al.'s tokens 50 and 500 of 512, scaled to ``max_len >= 3``: ``(early, late)``, 3 and 31 for 32.

    Always ``1 <= early < late < max_len``.

    Examples
    --------
    >>> icl_tokens(32)
    (3, 31)
    """
    return max(1, round(max_len * 50 / 512)), min(round(max_len * 500 / 512), max_len - 1)


def mid_context_token(max_len):
    """The token halfway through the context, ``max_len // 2`` (16 of 32): between :func:`icl_tokens`' two.

    Examples
    --------
    >>> mid_context_token(32)
    16
    """
    return max_len // 2


def induction_loss(logits, tokens):
    """Mean loss of the predictable half of repeated random tokens (:func:`repeated_random_tokens`).

    With halves of ``h`` tokens, tokens ``h + 1 .. 2h - 1`` repeat what followed an earlier
    occurrence of their predecessor; a model that copies predicts them with loss near 0, one
    that does not stays near ``log(vocab)``. Unlike the in-context learning score, which
    compares two tokens of the training distribution, this is a probe built to reward
    copying, on sequences the model never trained on.

    Examples
    --------
    >>> tokens = np.array([[0, 1, 2, 0, 1, 2]])
    >>> logits = 10.0 * np.eye(3)[np.roll(tokens, -1)]  # (1, 6, 3): sure of every next token
    >>> round(induction_loss(logits, tokens), 3)
    0.0
    """
    half = tokens.shape[1] // 2
    return float(token_losses(logits, tokens)[:, half:].mean())


def loss_report(model, *, num_sequences=1024, seed=15):
    """The ICL score where Olsson et al. compute it, on the training distribution, and the induction loss.

    Returns a dict: ``token_loss`` (mean loss of the early, mid-context and late tokens of
    :func:`icl_tokens` and :func:`mid_context_token` on fresh :func:`induction_batch`
    sequences), ``icl_score`` (late minus early there), ``induction_loss``
    (:func:`induction_loss` on repeated random tokens) and ``repeated_icl_score`` (late minus
    early on those). The repeated tokens fill the context with two halves of distinct tokens, so
    the model's ``max_len`` must be even and at most twice its ``vocab``.

    Examples
    --------
    >>> from mhattn.learn import load_trained
    >>> report = loss_report(load_trained(), num_sequences=16)
    >>> sorted(report)
    ['icl_score', 'induction_loss', 'repeated_icl_score', 'token_loss']
    >>> report["token_loss"].shape, report["icl_score"] < 0
    ((3,), True)
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
