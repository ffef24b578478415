"""The trained models that ship with the package (``mhattn/data/``), and how each was trained."""

from importlib import resources

from ..checks.checkpoint import read_extras
from .model import CHECKPOINT, ONE_LAYER_CHECKPOINT, SHORTCUT_CHECKPOINT, InductionModel


def load_trained(num_layers=2):
    """The trained model shipped with the package (a fresh copy each call).

    ``num_layers=2`` (the default) is the induction model; ``num_layers=1`` is a one-layer
    model trained the same way, which cannot learn the task.

    Examples
    --------
    >>> load_trained()
    InductionModel(num_layers=2, vocab=32, max_len=32, d_model=64, num_heads=4)
    """
    return _shipped({2: CHECKPOINT, 1: ONE_LAYER_CHECKPOINT}[num_layers], InductionModel.load)


def load_shortcut():
    """The two-layer model trained only on repeats whose first copy starts at position 0 (a fresh copy).

    Its training sequences (1500 steps of 64, a constant step size of 3e-3) held ``n`` random
    tokens (uniform in ``[4, 16]``, drawn with replacement) at positions ``0 .. n - 1``, the
    same tokens again right after them, and random tokens to the end. It copies well where
    its training put the repeat and poorly elsewhere: notebook 09's example of a shortcut.

    Examples
    --------
    >>> load_shortcut()
    InductionModel(num_layers=2, vocab=32, max_len=32, d_model=64, num_heads=4)
    """
    return _shipped(SHORTCUT_CHECKPOINT, InductionModel.load)


def training_record(num_layers=2):
    """How a shipped checkpoint was trained: a dict of what ``python -m mhattn.train`` stored beside it.

    Keys: ``seed``, ``steps``, ``lr``, ``batch_size``, ``seconds`` (the measured wall time of
    the command), ``cpu_seconds`` (the CPU time of its process: about the wall time on an
    idle core), ``machine`` (CPU model, cores, OS) and ``load_average`` (the machine's
    1-minute load average, the larger of its values before and after training: above the
    number of cores, processes waited for one).

    Examples
    --------
    >>> record = training_record()
    >>> sorted(record)
    ['batch_size', 'cpu_seconds', 'load_average', 'lr', 'machine', 'seconds', 'seed', 'steps']
    """
    keys = ("seed", "steps", "lr", "batch_size", "seconds", "cpu_seconds", "machine", "load_average")
    return _shipped({2: CHECKPOINT, 1: ONE_LAYER_CHECKPOINT}[num_layers], lambda path: read_extras(path, keys))


def _shipped(name, read):
    """``read(path)`` of the shipped checkpoint ``name`` (in ``mhattn/data/``)."""
    with resources.as_file(resources.files("mhattn") / "data" / name) as path:
        return read(path)
