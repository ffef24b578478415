"""What the trainer records besides the batch: two fixed probes, and how it runs (threads, progress).

:class:`Probes` draws its sequences once, from its own seeded stream, before the first step,
and only reads the model: how often it runs changes no weight. Its forward passes compute in
float32, as training does. :func:`blas_threads` and :func:`progress_reporter` use
threadpoolctl and tqdm where they are installed, and do without them where they are not.
"""

import contextlib
import importlib
import sys

import numpy as np

from .attention_patterns import repeated_random_tokens
from .in_context import icl_tokens, induction_loss, mid_context_token, token_losses
from .task import induction_batch
from .training_step import forward_pass

PROBE_SIZE = 256  #: sequences in each of the two probes (training task, repeated random tokens)


class Probes:
    """The history's probes: token losses on the training task, the induction loss on repeated tokens.

    Examples
    --------
    >>> from mhattn.learn.model import InductionModel
    >>> probes = Probes(InductionModel(1, vocab=8, max_len=8, d_model=8, num_heads=2), seed=0)
    >>> probes.record(1)
    >>> probes.history["probe_step"], len(probes.history["token_loss"][0])
    ([1], 3)
    """

    def __init__(self, model, seed):
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])  # the probes' own stream
        self.model = model
        self.task = induction_batch(rng, PROBE_SIZE, vocab=model.vocab, max_len=model.max_len)[0]
        self.repeated = repeated_random_tokens(rng, PROBE_SIZE, model.max_len // 2, model.vocab)
        early, late = icl_tokens(model.max_len)
        self.tokens = (early, mid_context_token(model.max_len), late)  # the tokens whose losses are kept
        self.history = {"probe_step": [], "token_loss": [], "induction_loss": []}

    def record(self, step):
        """Append ``step`` and the model's losses on the two probes, now."""
        losses = token_losses(forward_pass(self.model, self.task)[1], self.task)  # (PROBE_SIZE, max_len - 1)
        self.history["probe_step"].append(step)
        self.history["token_loss"].append([float(losses[:, k - 1].mean()) for k in self.tokens])
        self.history["induction_loss"].append(induction_loss(forward_pass(self.model, self.repeated)[1], self.repeated))


def _optional(name):
    """The module ``name``, or None where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def blas_threads(threads):
    """Limit BLAS to ``threads`` threads inside the ``with`` block, where threadpoolctl is installed.

    Without threadpoolctl the limit is left to the environment (``OPENBLAS_NUM_THREADS=1``).
    """
    threadpoolctl = _optional("threadpoolctl")
    if threadpoolctl is None:
        return contextlib.nullcontext()
    return threadpoolctl.threadpool_limits(limits=threads, user_api="blas")


@contextlib.contextmanager
def progress_reporter(total, show):
    """A ``report(step, history)`` for the loop: a tqdm bar, or a plain line every tenth of the run.

    With ``show=False`` it reports nothing.
    """
    tqdm = _optional("tqdm.auto") if show else None
    bar = tqdm.tqdm(total=total, desc="training", unit="step") if tqdm is not None else None
    every = max(1, total // 10)

    def report(step, history):
        if bar is not None:
            if history["step"] and history["step"][-1] == step:
                bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", accuracy=f"{history['accuracy'][-1]:.2f}",
                                refresh=False)
            bar.update()
        elif show and (step % every == 0 or step == total):
            print(f"training: step {step}/{total}, batch loss {history['loss'][-1]:.3f}", file=sys.stderr, flush=True)

    try:
        yield report
    finally:
        if bar is not None:
            bar.close()
