"""Where does the layer move each token? A 2-D view of inputs and outputs together."""

import numpy as np

from .. import checks


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
    """
    inputs, outputs = (checks.real_array(n, a) for n, a in (("inputs", inputs), ("outputs", outputs)))
    checks.ndim("inputs", inputs, 2, "(seq_len, d_model)")
    if outputs.shape != inputs.shape:
        raise ValueError(f"outputs must have the shape of inputs {inputs.shape}; got shape {outputs.shape}")
    if inputs.shape[0] < 2:
        raise ValueError(f"inputs must hold at least 2 tokens for a 2-D PCA; got shape {inputs.shape}")
    stacked = np.vstack([inputs, outputs]).astype(np.float64)  # (2 * seq_len, d_model)
    centred = stacked - stacked.mean(axis=0)  # (2 * seq_len, d_model)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)  # rows of axes: the principal axes
    variance = singular**2  # each axis's share of the variance, up to a common factor
    if variance.sum() == 0:
        raise ValueError("inputs and outputs must not all be the same vector: they span no plane to project on")
    components = axes[:2]  # (2, d_model)
    signs = np.sign(components[np.arange(2), np.abs(components).argmax(axis=1)])  # (2,)
    points = centred @ (components.T * signs)  # (2 * seq_len, 2)
    seq_len = inputs.shape[0]
    return points[:seq_len], points[seq_len:], variance[:2] / variance.sum()
