r"""Where order comes from: sinusoidal positional encodings and rotary embeddings (RoPE).

Attention without a mask is permutation-equivariant: shuffle the tokens and the outputs
shuffle the same way. A model learns order only from what tells positions apart.

* :func:`sinusoidal_encoding` (Vaswani et al. 2017) is *added* to the tokens once, before
  the first layer: position ``pos`` gets the vector of :math:`\sin, \cos` of
  ``pos * theta_i``.
* :func:`apply_rope` (Su et al. 2021) acts *inside* attention: it rotates each pair of
  coordinates of every query and key by the angle ``pos * theta_i``. A rotation keeps
  lengths, and the score :math:`q_i \cdot k_j` then depends on the positions only through
  :math:`i - j`.

Both use the frequencies of :func:`rope_angles`, :math:`\theta_i = \text{base}^{-2i/d}`.
RoPE pairs coordinate ``i`` with ``i + d_k / 2`` (GPT-NeoX, Hugging Face's Llama);
:func:`apply_rope_interleaved` pairs ``2i`` with ``2i + 1`` (RoFormer, Meta's Llama code),
and :func:`interleaved_to_half_split` is the fixed column permutation between the two.
Notebook 06 shows each of them at work.
"""

import numpy as np


def rope_angles(positions, d_k, base=10000.0):
    r"""The angle of every position and frequency: ``angles[p, i] = positions[p] * base ** (-2 i / d_k)``.

    Parameters
    ----------
    positions : ndarray of int, shape ``(seq_len,)``
    d_k : int
        Width of the vectors; there are ``ceil(d_k / 2)`` frequencies, from 1 radian per
        position down to nearly ``1 / base``.
    base : float, default 10000.0

    Returns
    -------
    ndarray of shape ``(seq_len, ceil(d_k / 2))``, float64

    Examples
    --------
    >>> angles = rope_angles(np.arange(3), d_k=4)  # frequencies 1 and 10000 ** (-2 / 4) = 0.01
    >>> print(np.round(angles, 3))
    [[0.   0.  ]
     [1.   0.01]
     [2.   0.02]]
    """
    return _angles(positions, d_k, base, np.float64)


def _angles(positions, d_k, base, dtype):
    """:func:`rope_angles` computed in ``dtype``: longdouble RoPE keeps longdouble's digits."""
    exponents = -np.arange(0, d_k, 2).astype(dtype) / np.asarray(d_k, dtype=dtype)  # (ceil(d_k / 2),)
    frequencies = np.asarray(base, dtype=dtype) ** exponents  # theta_i = base^(-2i / d_k)
    return np.multiply.outer(positions.astype(dtype), frequencies)  # (seq_len, ceil(d_k / 2)): position times frequency


def sinusoidal_encoding(seq_len, d_model, base=10000.0):
    r"""The sinusoidal positional encodings of Vaswani et al. (2017), section 3.5.

    .. math::

        PE_{pos,\, 2i} = \sin(pos\, \theta_i), \qquad PE_{pos,\, 2i+1} = \cos(pos\, \theta_i),
        \qquad \theta_i = \text{base}^{-2i/d_{\text{model}}}.

    Added to the token embeddings before the first layer. For a fixed offset ``k``,
    ``PE[pos + k]`` is a linear function of ``PE[pos]`` (each ``(sin, cos)`` pair turns by the
    angle ``k * theta_i``), the same for every ``pos``.

    Parameters
    ----------
    seq_len : int >= 0
    d_model : int >= 1
        An odd ``d_model`` ends with a sine column.
    base : float > 0, default 10000.0

    Returns
    -------
    ndarray of shape ``(seq_len, d_model)``, float64

    Examples
    --------
    >>> encoding = sinusoidal_encoding(seq_len=3, d_model=4)
    >>> print(np.round(encoding, 3))  # columns: sin, cos at frequency 1, then at 0.01
    [[ 0.     1.     0.     1.   ]
     [ 0.841  0.54   0.01   1.   ]
     [ 0.909 -0.416  0.02   1.   ]]
    """
    angles = rope_angles(np.arange(seq_len), d_model, base)  # (seq_len, ceil(d_model / 2))
    encoding = np.empty((seq_len, d_model))  # (seq_len, d_model)
    encoding[:, 0::2] = np.sin(angles)  # even columns: sin(pos theta_i)
    encoding[:, 1::2] = np.cos(angles[:, : d_model // 2])  # odd columns: cos(pos theta_i)
    return encoding


def apply_rope(x, positions, base=10000.0):
    r"""Rotary position embedding (Su et al. 2021), pairing coordinate ``i`` with ``i + d_k / 2``.

    Each pair :math:`(x_i, x_{i + d_k/2})` of the vector at position :math:`p` turns by the
    angle :math:`p\,\theta_i`:

    .. math::

        \begin{pmatrix} y_i \\ y_{i + d_k/2} \end{pmatrix} =
        \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}
        \begin{pmatrix} x_i \\ x_{i + d_k/2} \end{pmatrix},
        \qquad \theta_i = \text{base}^{-2i/d_k}.

    Applied to queries and keys (never to values), it makes every score
    :math:`\operatorname{rope}(q, i) \cdot \operatorname{rope}(k, j)` a function of
    :math:`q`, :math:`k` and :math:`i - j` only. This "half-split" pairing is GPT-NeoX's
    and Hugging Face's Llama's (``rotate_half``); for RoFormer's see
    :func:`apply_rope_interleaved`.

    Parameters
    ----------
    x : ndarray of shape ``(..., seq_len, d_k)``
        Queries or keys, ``d_k`` even. float32 stays float32; float16 is computed in float32;
        the angles are computed in float64, or in longdouble for a longdouble ``x``.
    positions : array of int, shape ``(seq_len,)`` or ``(batch, seq_len)``
        The position of each row, in ``[-2**53, 2**53]`` (every such int is exact as a float,
        so different positions turn by different angles); negative positions turn backwards
        (the inverse rotation). ``(batch, seq_len)`` gives every sequence of a batch its own
        positions (an offset per row, left padding, packed sequences), for ``x`` of shape
        ``(batch, heads, seq_len, d_k)``: the same positions in every head.
    base : float > 0, default 10000.0
        The literature's :math:`\theta` (Su et al. call it 10000, Llama 3 uses 500000).

    Returns
    -------
    ndarray shaped like ``x``

    Examples
    --------
    >>> v = np.random.default_rng(0).standard_normal(8)
    >>> x = np.tile(v, (4, 1))  # the same vector at positions 0, 1, 2, 3
    >>> rotated = apply_rope(x, np.arange(4))
    >>> rotated.shape
    (4, 8)
    >>> bool(np.allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1)))  # rotations keep lengths
    True
    >>> scores = rotated @ rotated.T
    >>> bool(np.allclose(np.diag(scores, -1), scores[1, 0]))  # one position apart: always the same score
    True
    """
    cos, sin = _cos_sin(positions, x, base)  # (seq_len, d_k / 2) each, or (batch, 1, seq_len, d_k / 2)
    x1, x2 = np.split(x, 2, axis=-1)  # (..., seq_len, d_k / 2) each: pair i is (x1[..., i], x2[..., i])
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)  # (..., seq_len, d_k)


def _angle_dtype(dtype):
    """The angles' dtype for ``x`` of ``dtype``: float64, or longdouble for longdouble ``x``."""
    return np.dtype(np.longdouble) if dtype == np.longdouble else np.dtype(np.float64)


def apply_rope_interleaved(x, positions, base=10000.0):
    r"""Rotary position embedding in RoFormer's convention: coordinate ``2i`` pairs with ``2i + 1``.

    The pairing of RoFormer, Meta's Llama reference code and Stanford's CS336 (the
    half-split one of :func:`apply_rope` is GPT-NeoX's and Hugging Face's Llama's). The
    same rotations as :func:`apply_rope`, on other pairs. With
    ``order = interleaved_to_half_split(d_k)``,
    ``apply_rope_interleaved(x, p)[..., order] == apply_rope(x[..., order], p)``.

    Parameters and returns are :func:`apply_rope`'s.

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((4, 8))  # (seq_len, d_k)
    >>> positions = np.arange(4)
    >>> rotated = apply_rope_interleaved(x, positions)
    >>> order = interleaved_to_half_split(8)
    >>> bool(np.allclose(rotated[..., order], apply_rope(x[..., order], positions)))
    True
    """
    cos, sin = _cos_sin(positions, x, base)  # (seq_len, d_k / 2) each, or (batch, 1, seq_len, d_k / 2)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., seq_len, d_k / 2) each: pair i is (x[2i], x[2i + 1])
    rotated = np.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)  # (..., seq_len, d_k / 2, 2)
    return rotated.reshape(x.shape)  # (..., seq_len, d_k): back to 2i, 2i + 1


def _cos_sin(positions, x, base):
    """``cos`` and ``sin`` of every angle, in ``x``'s dtype: ``(seq_len, d_k / 2)``, or ``(batch, 1, seq_len, d_k / 2)``
    for one row of positions per sequence."""
    angles = _angles(positions, x.shape[-1], base, _angle_dtype(x.dtype))  # (seq_len, d_k / 2) or (batch, ...)
    if angles.ndim == 3:  # one row of positions per sequence: the same in every head
        angles = angles[:, None]  # (batch, 1, seq_len, d_k / 2)
    return np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)


def interleaved_to_half_split(d_k):
    """The column order that turns the interleaved pairing into the half-split one.

    ``order = [0, 2, 4, ..., d_k - 2, 1, 3, ..., d_k - 1]``: the first coordinates of the
    pairs, then the second ones. Reordering the query and key columns of every head of a
    model (``W_q[:, order]``, ``W_k[:, order]``) changes no score, since the dot product sums
    over the same pairs; that is how a checkpoint of one convention runs in the other.

    Returns
    -------
    ndarray of int, shape ``(d_k,)``

    Examples
    --------
    >>> interleaved_to_half_split(6)  # the first coordinates of the pairs, then the second ones
    array([0, 2, 4, 1, 3, 5])
    """
    return np.concatenate([np.arange(0, d_k, 2), np.arange(1, d_k, 2)])  # (d_k,): evens, then odds
