r"""Train :class:`mhattn.learn.model.InductionModel` with the chapter's own backward pass and Adam.

From a terminal::

    python -m mhattn.train --layers 2 --seed 0 --out induction.npz

One step: draw a batch of induction sequences (:func:`mhattn.learn.task.induction_batch`: a
block of distinct tokens repeated at a random offset, sometimes after a gap), run the model
forward and back (:func:`mhattn.learn.training_step.loss_and_grads`), and let Adam move every
weight.

The recipe has two parts. The circuit forms in the first ``FORMING_STEPS`` steps (the induction
loss falls at about steps 700 to 900), on full batches; the later steps refine it on half
batches, at half the cost a step. Throughout, ``EDGE_SHARE`` of the sequences sit at the ends of
the offset range (the first copy at position 0, or the second copy ending the context), which a
uniform offset reaches least often, and where short blocks are copied least reliably.

Everything is seeded: the same seed on the same machine gives the same checkpoint, bit
for bit. The history's probes (:mod:`.training_probes`) only read the model, so how often they
run changes no weight.

A checkpoint written by ``python -m mhattn.train`` records the time its own run took; the
shipped model's record (:func:`mhattn.learn.training_record`) says how long the default
recipe (1000 steps of 64 sequences, then 2500 of 32, probes every 50 steps) took on one core.
"""

import ctypes
import math

import numpy as np

from .model import InductionModel
from .optim import Adam
from .task import accuracy, induction_batch
from .training_probes import Probes, blas_threads, progress_reporter
from .training_step import loss_and_grads

STEPS = 3500  #: default number of training steps
BATCH_SIZE = 64  #: sequences per step for the first FORMING_STEPS steps; half as many after them
FORMING_STEPS = 1000  #: the steps on full batches, in which the induction circuit forms
EDGE_SHARE = 0.1  #: the share of each batch at the ends of the offset range (induction_batch's edge_share)
LEARNING_RATE = 1e-2  #: Adam's peak step size
WARMUP = 100  #: steps over which the step size rises linearly from lr / WARMUP to lr
FINAL_LR_FRACTION = 0.1  #: after the warmup, a cosine takes the step size from lr down to this fraction of it
EVAL_EVERY = 5  #: steps between the history's entries of the batch's loss and accuracy (free: the step computed them)
PROBE_EVERY = 50  #: steps between the history's probe entries (two forward passes of 256 sequences each)


def learning_rate_at(step, steps, lr, warmup=WARMUP, final_fraction=FINAL_LR_FRACTION):
    """The step size of step ``step`` (counted from 1): a linear warmup, then a cosine to ``final_fraction * lr``.

    Examples
    --------
    >>> learning_rate_at(50, 1000, 0.01)  # halfway through the warmup
    0.005
    >>> round(learning_rate_at(1000, 1000, 0.01), 6)  # the last step: FINAL_LR_FRACTION of lr
    0.001
    """
    if step <= warmup:
        return lr * step / warmup
    progress = (step - warmup) / max(1, steps - warmup)  # 0 after the warmup, 1 at the last step
    return lr * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def train(
    num_layers=2,
    *,
    seed=0,
    steps=STEPS,
    lr=LEARNING_RATE,
    batch_size=BATCH_SIZE,
    dtype=np.float32,
    eval_every=EVAL_EVERY,
    probe_every=PROBE_EVERY,
    progress=False,
    threads=1,
):
    """Train a fresh :class:`InductionModel`; return it with its ``history`` filled in.

    Parameters
    ----------
    num_layers : int, default 2
    seed : int, keyword only
        Seeds independent streams, children of ``np.random.SeedSequence(seed)``: the initial
        weights come from ``spawn(2)[0]`` (:func:`initial_model`), the training batches from
        ``np.random.default_rng(spawn(2)[1])``, one :func:`induction_batch` per step.
    steps, lr, batch_size : keyword only
        Adam's step size at step ``t`` is :func:`learning_rate_at`: ``lr`` after a linear
        warmup of ``WARMUP`` steps, then a cosine down to ``FINAL_LR_FRACTION * lr``. The first
        ``FORMING_STEPS`` steps draw ``batch_size`` sequences each, the later ones
        ``max(1, batch_size // 2)``; ``EDGE_SHARE`` of every batch sits at the ends of the
        offset range.
    dtype : float32 or float64, keyword only
        The compute dtype; the weights are kept in float64.
    eval_every : int, keyword only
        Every this many steps (and at step 1) the history records the ``step``, the step
        size ``lr``, and the batch's ``loss`` and ``accuracy``.
    probe_every : int, keyword only
        Every this many steps (and at step 1) the history records ``probe_step`` and, on two
        fixed probes of ``PROBE_SIZE`` sequences drawn from a third seeded stream
        (:class:`mhattn.learn.training_probes.Probes`): ``token_loss`` ``(3,)``, the mean loss
        of the tokens :func:`mhattn.learn.circuits.icl_tokens` names (early, mid-context, late)
        on fresh sequences of the training task, whose ``late - early`` difference is the
        in-context learning score of Olsson et al. (2022); and ``induction_loss``, the mean
        loss of the second half of repeated random tokens.
    progress : bool, keyword only
        Show a tqdm progress bar where tqdm is installed, else a line every tenth of the run.
    threads : int, keyword only, default 1
        BLAS threads during training, where threadpoolctl is installed (without it, BLAS
        keeps its own setting, ``OPENBLAS_NUM_THREADS`` say). The matrices are small (2048 x
        64 x 192 at most), so a second thread gains little on an idle machine, and on a busy
        one a BLAS thread that waits for a free core stalls every product.

    Examples
    --------
    >>> model = train(2, steps=1, batch_size=2)
    >>> model.history["step"], model.history["token_loss"].shape
    (array([1]), (1, 3))
    """
    model = initial_model(num_layers, seed)
    data = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])  # the batches' own stream
    optimizer = Adam(model.parameters(), lr=lr)
    probes = Probes(model, seed)
    history = {"step": [], "lr": [], "loss": [], "accuracy": []}
    with blas_threads(threads), progress_reporter(steps, progress) as report:
        for step in range(1, steps + 1):
            size = batch_size if step <= FORMING_STEPS else max(1, batch_size // 2)
            tokens, n, offset, gap = induction_batch(data, size, vocab=model.vocab, max_len=model.max_len,
                                                     edge_share=EDGE_SHARE)
            loss, grads, logits = loss_and_grads(model, tokens, n, dtype)
            optimizer.lr = learning_rate_at(step, steps, lr)
            optimizer.step(grads)
            if step % probe_every == 0 or step == 1:
                probes.record(step)
            if step % eval_every == 0 or step == 1:
                row = (step, optimizer.lr, loss, accuracy(logits, tokens, n, offset, gap))
                for name, value in zip(history, row, strict=True):
                    history[name].append(value)
            report(step, history)
    model.history = {name: np.array(values) for name, values in (history | probes.history).items()}
    return model


def keep_freed_memory():
    """Ask glibc to keep freed memory for the next step instead of returning it to the OS.

    A training step allocates about 18 MB of temporaries and frees them again. By default
    glibc hands the top of its heap back to the operating system and the next step takes it
    back, one page fault per 4 KB page: about 4600 faults per step, which we measured as half
    of the step time (PyTorch's eager steps lose the same). Raising three thresholds keeps
    the memory in the process. It changes how much memory the process holds on to, not any
    number it computes. Linux with glibc only; elsewhere it does nothing and returns False.
    A process-wide setting: the command line (:func:`main`) makes it for its own process;
    :func:`train` never does, so importing and calling it changes nothing around it.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # from glibc's malloc.h
    settings = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 256 << 20), (M_TOP_PAD, 64 << 20))
    return all(libc.mallopt(option, value) == 1 for option, value in settings)


def initial_model(num_layers=2, seed=0):
    """The untrained model that :func:`train` starts from with this ``seed`` (for before/after pictures).

    Examples
    --------
    >>> initial_model(2, seed=0)
    InductionModel(num_layers=2, vocab=32, max_len=32, d_model=64, num_heads=4)
    """
    init_seed = np.random.SeedSequence(seed).spawn(2)[0]  # the weights' stream
    return InductionModel(num_layers, seed=int(init_seed.generate_state(1)[0]))
