"""The loss the chapter's models train on: cross-entropy, with its gradient."""

import numpy as np


def cross_entropy(logits, targets):
    r"""Mean cross-entropy of ``logits`` against ``targets``, and its gradient.

    With :math:`p = \operatorname{softmax}(z)` and target :math:`y`, the loss is
    :math:`-\log p_y` and its gradient with respect to the logits is :math:`p - \text{onehot}(y)`:
    more probability on the right answer, less on every other.

    Parameters
    ----------
    logits : ndarray of shape ``(count, vocab)``
    targets : ndarray of int, shape ``(count,)``
        Class indices in ``[0, vocab)`` (no negative index counts from the end).

    Returns
    -------
    loss : float
        The mean over the ``count`` rows.
    d_logits : ndarray of shape ``(count, vocab)``

    Examples
    --------
    >>> loss, d_logits = cross_entropy(np.zeros((2, 4)), np.array([0, 3]))
    >>> round(loss, 3)  # log 4
    1.386
    >>> d_logits.round(3)
    array([[-0.375,  0.125,  0.125,  0.125],
           [ 0.125,  0.125,  0.125, -0.375]])
    """
    count = max(len(targets), 1)
    rows = np.arange(len(targets))
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (count, vocab): exp cannot overflow
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (count, vocab)
    loss = -float(log_probs[rows, targets].sum()) / count  # mean of -log p_y
    d_logits = np.exp(log_probs)  # (count, vocab): p
    d_logits[rows, targets] -= 1.0  # p - onehot(y)
    return loss, d_logits / count  # the mean divides every row's gradient by count
