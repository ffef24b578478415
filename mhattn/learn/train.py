r"""Train :class:`mhattn.learn.model.InductionModel` with the chapter's own backward pass and Adam.

From a terminal::

    python -m mhattn.train --layers 2 --seed 0 --out induction.npz

One step: draw a batch of induction sequences (:func:`mhattn.learn.task.induction_batch`: a
block of distinct tokens repeated at a random offset, sometimes after a gap), run the model forward through each layer's
:func:`mhattn.core.grad_full.module_vjp`, take the cross-entropy of every next token, run the chain
rule backwards layer by layer, and let Adam move every weight. Everything is seeded: the
same seed on the same machine gives the same checkpoint, bit for bit.
"""

import ctypes
import math

import numpy as np

from ..checks.optional import require
from ..core.grad_full import module_vjp
from ..core.masks import causal_mask
from .circuits import icl_tokens, induction_loss, mid_context_token, repeated_random_tokens, token_losses
from .losses import cross_entropy
from .model import InductionModel
from .optim import Adam
from .task import accuracy, induction_batch

STEPS = 4000  #: default number of training steps
BATCH_SIZE = 64  #: sequences per step
LEARNING_RATE = 1e-2  #: Adam's peak step size
WARMUP = 100  #: steps over which the step size rises linearly from lr / WARMUP to lr
FINAL_LR_FRACTION = 0.1  #: after the warmup, a cosine takes the step size from lr down to this fraction of it
EVAL_EVERY = 5  #: steps between the history's entries (dense enough to draw the phase change)
PROBE_SIZE = 256  #: sequences in each of the history's two fixed probes (training task, repeated random tokens)


def loss_and_grads(model, tokens, n, dtype=np.float32):
    """Forward and backward through the whole model on one batch.

    Parameters
    ----------
    model : InductionModel
    tokens : ndarray of int, shape ``(batch, max_len)``
    n : ndarray of int, shape ``(batch,)``
        Repeated-block lengths (checked). The loss is a language model's: the mean
        cross-entropy of every next token, predictable or not.
    dtype : float32 or float64
        The dtype to compute in (the weights stay float64).

    Returns
    -------
    loss : float
    grads : dict
        One gradient per entry of ``model.parameters()``, same shape.
    logits : ndarray of shape ``(batch, max_len, vocab)``

    Raises
    ------
    TypeError, ValueError
        For tokens, ``n`` or ``dtype`` out of their ranges, or a parameter that is not finite.
    FloatingPointError
        If the loss overflows (weights far too large: a diverged run).

    Examples
    --------
    >>> model = InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    >>> tokens, n, _, _ = induction_batch(np.random.default_rng(0), 2, vocab=6, max_len=8)
    >>> loss, grads, logits = loss_and_grads(model, tokens, n)
    >>> sorted(grads) == sorted(model.parameters()), logits.shape
    (True, (2, 8, 6))
    >>> grads["layer0.W_qkv"].shape
    (8, 24)
    """
    batch, seq_len = tokens.shape
    embed, pos, unembed = (p.astype(dtype) for p in (model.embed, model.pos, model.unembed))
    mask = causal_mask(seq_len)  # (seq_len, seq_len)

    h = embed[tokens] + pos[:seq_len]  # (batch, seq_len, d_model)
    backwards = []
    for layer in model.layers:
        out, _, backward = module_vjp(layer, h, mask)  # the chapter's module, forward once
        backwards.append(backward)
        h = h + out  # (batch, seq_len, d_model)
    logits = h @ unembed  # (batch, seq_len, vocab)
    scored = np.broadcast_to(np.arange(seq_len) < seq_len - 1, (batch, seq_len))  # every t with a token t + 1
    next_tokens = np.roll(tokens, -1, axis=1)  # (batch, seq_len): token t + 1 (wraps at the end, never scored)
    loss, d_scored = cross_entropy(logits[scored], next_tokens[scored])  # (count, vocab): only the scored rows
    if not math.isfinite(loss):
        raise FloatingPointError(f"the loss overflowed {np.dtype(dtype)} (got {loss}): the weights are far too large")

    grads = {}
    d_logits = np.zeros_like(logits)  # (batch, seq_len, vocab): positions that do not count get no gradient
    d_logits[scored] = d_scored
    grads["unembed"] = h.reshape(-1, model.d_model).T @ d_logits.reshape(-1, model.vocab)  # (d_model, vocab)
    d_h = d_logits @ unembed.T  # (batch, seq_len, d_model)
    for i in reversed(range(len(model.layers))):
        layer_grads = backwards[i](d_h)  # {"x", "W_qkv", "W_o"}
        grads[f"layer{i}.W_qkv"], grads[f"layer{i}.W_o"] = layer_grads["W_qkv"], layer_grads["W_o"]
        d_h = d_h + layer_grads["x"]  # the residual: the gradient flows around the layer and through it
    grads["pos"] = np.zeros_like(model.pos)  # (max_len, d_model)
    grads["pos"][:seq_len] = d_h.sum(axis=0)  # every sequence adds the same position rows
    one_hot = tokens.reshape(-1, 1) == np.arange(model.vocab)  # (tokens, vocab): embed[tokens] = one_hot @ embed
    grads["embed"] = one_hot.T.astype(dtype) @ d_h.reshape(-1, model.d_model)  # (vocab, d_model): summed per token id
    return loss, grads, logits


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
        warmup of ``WARMUP`` steps, then a cosine down to ``FINAL_LR_FRACTION * lr``.
    dtype : float32 or float64, keyword only
        The compute dtype; the weights are kept in float64.
    eval_every : int, keyword only
        Every this many steps (and at step 1) the history records the step, the batch's
        ``loss`` and ``accuracy``, and on two fixed probes of ``PROBE_SIZE`` sequences (drawn
        from a third seeded stream): ``token_loss`` ``(3,)``, the mean loss of the tokens
        :func:`mhattn.learn.circuits.icl_tokens` names (early, mid-context, late) on fresh
        sequences of the training task, whose ``late - early`` difference is the in-context
        learning score of Olsson et al. (2022); and ``induction_loss``, the mean loss of the
        second half of repeated random tokens (:func:`mhattn.learn.circuits.induction_loss`).
    progress : bool, keyword only
        Show a tqdm progress bar (terminal or Jupyter).
    threads : int, keyword only, default 1
        BLAS threads during training. The matrices are small (2048 x 64 x 192 at most), so a
        second thread gains little on an idle machine, and on a busy one a BLAS thread that
        waits for a free core stalls every product: one thread is the safe choice.

    Examples
    --------
    >>> model = train(2, steps=1, batch_size=2)
    >>> model.history["step"], model.history["token_loss"].shape
    (array([1]), (1, 3))
    """
    model = initial_model(num_layers, seed)
    data = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])  # the batches' own stream
    optimizer = Adam(model.parameters(), lr=lr)
    probe_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])  # the probes' own stream
    task_probe = induction_batch(probe_rng, PROBE_SIZE, vocab=model.vocab, max_len=model.max_len)[0]
    repeated_probe = repeated_random_tokens(probe_rng, PROBE_SIZE, model.max_len // 2, model.vocab)
    early, late = icl_tokens(model.max_len)
    probe_tokens = (early, mid_context_token(model.max_len), late)
    history = {"step": [], "lr": [], "loss": [], "accuracy": [], "token_loss": [], "induction_loss": []}
    bar = _progress_bar(steps) if progress else None
    with require("threadpoolctl").threadpool_limits(limits=threads, user_api="blas"):
        for step in range(1, steps + 1):
            tokens, n, offset, gap = induction_batch(data, batch_size, vocab=model.vocab, max_len=model.max_len)
            loss, grads, logits = loss_and_grads(model, tokens, n, dtype)
            optimizer.lr = learning_rate_at(step, steps, lr)
            optimizer.step(grads)
            if step % eval_every == 0 or step == 1:
                history["step"].append(step)
                history["lr"].append(optimizer.lr)
                history["loss"].append(loss)
                history["accuracy"].append(accuracy(logits, tokens, n, offset, gap))
                losses = token_losses(model.forward(task_probe)[0], task_probe)  # (PROBE_SIZE, max_len - 1)
                history["token_loss"].append([losses[:, k - 1].mean() for k in probe_tokens])
                history["induction_loss"].append(induction_loss(model.forward(repeated_probe)[0], repeated_probe))
                if bar is not None:
                    bar.set_postfix(loss=f"{loss:.3f}", accuracy=f"{history['accuracy'][-1]:.2f}", refresh=False)
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()
    model.history = {name: np.array(values) for name, values in history.items()}
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


def _progress_bar(total):
    from tqdm.auto import tqdm  # a terminal bar, or a widget in Jupyter

    return tqdm(total=total, desc="training", unit="step")
