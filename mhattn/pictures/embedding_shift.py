"""Where does the layer move each token? A 2-D view of inputs and outputs together."""

import numpy as np


def embedding_shift_2d(inputs, outputs):
    """Project input and output token vectors into one shared 2-D PCA plane.

    PCA is fitted on the inputs and outputs stacked together, so both live in the same
    coordinates and the arrow from ``inputs_2d[i]`` to ``outputs_2d[i]`` shows where the
    layer moved token ``i`` (attention and the linear maps together: notebook 05 separates them).

    Parameters
    ----------
    inputs : ndarray of shape ``(seq_len, d_model)``
        One sequence's token vectors before attention.
    outputs : ndarray of shape ``(seq_len, d_model)``
        The same tokens after attention.

    Returns
    -------
    inputs_2d : ndarray of shape ``(seq_len, 2)``
    outputs_2d : ndarray of shape ``(seq_len, 2)``
    explained_variance_ratio : ndarray of shape ``(2,)``
        The share of the stacked vectors' variance each component keeps.

    Notes
    -----
    The PCA is an SVD of the centred stack, as notebook 05 derives it: the same plane as
    scikit-learn's ``PCA(n_components=2)`` (the tests compare the two), without the seconds that
    importing scikit-learn costs each time the explorer starts. Each component's sign is fixed
    so that its largest-magnitude loading is positive (scikit-learn's own sign convention has
    changed between releases); the picture is then the same on every run and every version.
    The stack is first divided by a power of two near its largest entry (exactly: the plane is
    the same), so that squared singular values neither overflow (entries near 1e200) nor
    underflow (near 1e-200).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> inputs = rng.standard_normal((4, 8))  # (seq_len, d_model)
    >>> outputs = inputs.mean(axis=0) + 0.5 * (inputs - inputs.mean(axis=0))  # halfway to the mean
    >>> inputs_2d, outputs_2d, explained = embedding_shift_2d(inputs, outputs)
    >>> inputs_2d.shape, outputs_2d.shape, explained.shape
    ((4, 2), (4, 2), (2,))
    >>> bool(explained.sum() <= 1)  # two components keep at most all of the variance
    True
    """
    stacked = np.vstack([inputs, outputs]).astype(np.float64)  # (2 * seq_len, d_model)
    scale = 2.0 ** (np.frexp(np.abs(stacked).max())[1] - 1)  # a power of two near the largest entry
    unit = stacked / scale  # entries in (-2, 2): their squares neither overflow nor underflow
    centred = unit - unit.mean(axis=0)  # (2 * seq_len, d_model)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)  # rows of axes: the principal axes
    variance = singular**2  # each axis's share of the variance, up to a common factor
    components = axes[:2]  # (2, d_model)
    signs = np.sign(components[np.arange(2), np.abs(components).argmax(axis=1)])  # (2,)
    points = (centred @ (components.T * signs)) * scale  # (2 * seq_len, 2), in the units of the inputs
    seq_len = inputs.shape[0]
    return points[:seq_len], points[seq_len:], variance[:2] / variance.sum()
