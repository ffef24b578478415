"""The explorer's front door: :func:`explorer` builds the widget from its starting settings."""

from ..checks.explorer import DEFAULT_TOKENS
from .controls import Explorer
from .frame import State


def explorer(d_model=64, num_heads=4, seq_len=8, seed=123, mask="none", *, trained=False, tokens=DEFAULT_TOKENS,
             layer=1, positions=None):
    """Build the interactive multi-head attention explorer.

    Parameters
    ----------
    d_model : int, one of ``D_MODELS`` = (12, 16, 32, 48, 64), default 64
    num_heads : int, default 4
        Must divide ``d_model`` and be at most ``MAX_HEADS`` = 8; see :func:`head_choices`.
    seq_len : int in [2, 32], default 8
    seed : int in [0, 2**32 - 1], default 123
        Seeds the random tokens and, independently, the weights.
    mask : {"none", "causal", "padding"}, default "none"
    trained : bool, keyword only, default False
        Start with the trained model ("trained (induction)") instead of the untrained layer.
    tokens : str, keyword only, default ``"a b c d x a b c"``
        What the trained model reads: 2 to 32 letters a-z, spaces optional.
    layer : int, keyword only, default 1
        The trained model's layer shown: 0 or 1.
    positions : str, keyword only, optional
        Untrained: "none" (default) or "rope"; trained: "learned" (default) or "none".

    Returns
    -------
    Explorer
        An ``ipywidgets.VBox``: show it as a cell's last line or with ``display(explorer())``.

    Raises
    ------
    TypeError, ValueError
        If a starting value is not one the controls could show.

    Examples
    --------
    >>> explorer(d_model=12, num_heads=2, seq_len=4, seed=0, mask="causal")  # outside a kernel: drawn at once
    Explorer(d_model=12, num_heads=2, seq_len=4, seed=0, mask='causal')
    """
    return Explorer(State(trained=trained, seq_len=seq_len, d_model=d_model, num_heads=num_heads, seed=seed,
                          mask=mask, tokens=tokens, layer=layer, positions=positions))
