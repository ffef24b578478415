"""The arguments of the trainer and its pieces: Adam, the loss, the schedule, training, generation.

:mod:`mhattn.learn.optim`, :mod:`mhattn.learn.losses`, :mod:`mhattn.learn.train` and
:mod:`mhattn.learn.generate` run plain; these checks run first, at their doors, so that an
error names the argument, and a refused call changes nothing (Adam's moments, its step
counter and every parameter stay as they were).
"""

import math

import numpy as np

from .learning import int_array, model_like, real
from .model import parameters, scored_batch
from .model import tokens as check_tokens
from .positions import count
from .values import finite, flag, float_dtype, integer, learning_rate, positive_int, real_array, real_number
from .values import seed as check_seed

# --- mhattn.learn.optim.Adam ------------------------------------------------------------------


def _fraction(name, value):
    """``value`` as a float in ``[0, 1)``: a moment's decay (1 would never move from 0, nor correct it)."""
    value = real_number(name, value, "a float in [0, 1)")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a float in [0, 1); got {value}")
    return float(value)


def _parameter(name, p):
    """``p`` if Adam can update it in place: a plain, writable float ndarray; or a ``TypeError``/``ValueError``."""
    if not isinstance(p, np.ndarray) or isinstance(p, np.ma.MaskedArray) or p.dtype.kind != "f":
        raise TypeError(f"params[{name!r}] must be a float ndarray, updated in place; got {p!r}")
    if not p.flags.writeable:
        raise ValueError(f"params[{name!r}] must be writable (Adam updates it in place); got a read-only array "
                         f"of shape {p.shape}")
    return p


def adam_args(self, params, lr, beta1, beta2, eps):
    """Arguments of :class:`mhattn.learn.optim.Adam`: settings that never divide by zero, arrays it can update."""
    lr = learning_rate(lr)
    beta1, beta2 = _fraction("beta1", beta1), _fraction("beta2", beta2)
    eps = real_number("eps", eps, "a finite float > 0")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite float > 0; got {eps}")
    if not isinstance(params, dict) or not params:
        raise TypeError(f"params must be a non-empty dict of float arrays (model.parameters()); got {params!r}")
    for name, p in params.items():
        _parameter(name, p)
    return {"self": self, "params": params, "lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps}, None


def adam_step_args(self, grads):
    """Arguments of :meth:`mhattn.learn.optim.Adam.step`: everything the step touches, checked before any of it moves.

    ``grads`` holds one finite array per parameter, of its shape; every parameter is still a
    writable float array of the shape its moments have; and the step cannot overflow
    (:func:`_step_fits`).
    """
    if not isinstance(grads, dict):
        raise TypeError(f"grads must be a dict of arrays, one per parameter; got {type(grads).__name__}")
    missing, unknown = sorted(set(self.params) - set(grads)), sorted(set(grads) - set(self.params))
    if missing or unknown:
        raise ValueError(f"grads must have the parameters' names {sorted(self.params)}; missing {missing}, "
                         f"unknown {unknown}")
    if set(self.params) != set(self.m):
        raise ValueError(f"params must keep the names Adam was built with {sorted(self.m)}; got {sorted(self.params)}")
    lr, t = learning_rate(self.lr), self.t + 1  # the step size and the number of the step about to be taken
    checked = {}
    for name, p in self.params.items():
        _parameter(name, p)
        if p.shape != self.m[name].shape:
            raise ValueError(f"params[{name!r}] must keep its shape {self.m[name].shape} (Adam's moments have it); "
                             f"got shape {p.shape}")
        g = real_array(f"grads[{name!r}]", grads[name])
        if g.shape != p.shape:
            raise ValueError(f"grads[{name!r}] must have the parameter's shape {p.shape}; got shape {g.shape}")
        checked[name] = finite(f"grads[{name!r}]", g)
        _step_fits(name, p, g, self.m[name], lr, t, self.beta1, self.beta2, self.eps)
    return {"self": self, "grads": checked}, None


def _step_fits(name, p, g, m, lr, t, beta1, beta2, eps):
    """Raise ``ValueError`` if step ``t`` of Adam could overflow ``p``'s dtype: checked before anything moves.

    Each bound follows the step's own arithmetic. ``g * g`` stays finite if ``max|g| <
    sqrt(max)``. The new first moment over its bias correction, ``m_hat``, is at most
    ``moment = (beta1 max|m| + (1 - beta1) max|g|) / (1 - beta1**t)``, and ``lr * moment`` must
    stay finite. A weight moves by at most ``lr * min(ratio, moment / eps)``, with ``ratio`` a
    bound on ``|m_hat| / sqrt(v_hat)`` by Cauchy-Schwarz over the gradients' history (``r =
    beta1**2 / beta2``): ``(1 - beta1) / sqrt(1 - beta2) * sqrt(sum_{k<t} r**k) * sqrt(1 -
    beta2**t) / (1 - beta1**t)``, which is 1 at the first step; ``max|p|`` plus that must stay
    finite.
    """
    if not p.size:
        return
    top = float(np.finfo(p.dtype).max)
    g_max, m_max, p_max = (float(np.abs(a).max()) for a in (g, m, p))
    if not g_max < math.sqrt(top):
        raise ValueError(f"grads[{name!r}] must stay below {math.sqrt(top):.3g} in size, as Adam squares it in "
                         f"{p.dtype}; got {g_max:.3g}")
    moment = (beta1 * m_max + (1 - beta1) * g_max) / (1 - beta1**t)
    largest_move = lr * min(adam_ratio_bound(t, beta1, beta2), moment / eps)
    if not (lr * moment < top and p_max + largest_move < top):
        raise ValueError(f"lr = {lr:g} could move params[{name!r}] (largest {p_max:.3g}) by up to "
                         f"{largest_move:.3g}, beyond {p.dtype}'s largest number: use a smaller lr")


def adam_ratio_bound(t, beta1, beta2):
    """A bound on Adam's ``|m_hat| / sqrt(v_hat)`` at step ``t``, whatever the gradients (:func:`_step_fits`)."""
    r = beta1**2 / beta2
    try:
        history = t if r == 1 else (1 - r**t) / (1 - r)  # the sum of r**k for k < t
    except OverflowError:  # r > 1 and t large: this bound says nothing (the one through eps still does)
        return math.inf
    return (1 - beta1) / math.sqrt(1 - beta2) * math.sqrt(history) * math.sqrt(1 - beta2**t) / (1 - beta1**t)


# --- mhattn.learn.losses -----------------------------------------------------------------------


def cross_entropy_args(logits, targets):
    """Arguments of :func:`mhattn.learn.losses.cross_entropy`: logits ``(count, vocab)``, targets in ``[0, vocab)``."""
    logits = real("logits", logits, 2, "(count, vocab)")
    return {"logits": logits, "targets": int_array("targets", targets, logits.shape[:1], logits.shape[1])}, None


# --- mhattn.learn.train --------------------------------------------------------------------------


def loss_and_grads_args(model, tokens, n, dtype):
    """Arguments of :func:`mhattn.learn.train.loss_and_grads`: a batch the model can score, a float dtype."""
    model = model_like(model)
    tokens, n = scored_batch(model, tokens, n)
    return {"model": model, "tokens": tokens, "n": n, "dtype": float_dtype(dtype)}, None


def schedule_args(step, steps, lr, warmup, final_fraction):
    """Arguments of :func:`mhattn.learn.train.learning_rate_at`: a step in ``[1, steps]``, a step size, a shape."""
    steps = positive_int("steps", steps)
    expected = f"an int in [1, steps = {steps}]"
    step = integer("step", step, expected)
    if not 1 <= step <= steps:
        raise ValueError(f"step must be {expected} (counted from 1); got {step}")
    final_fraction = real_number("final_fraction", final_fraction, "a float in [0, 1]")
    if not 0 <= final_fraction <= 1:
        raise ValueError(f"final_fraction must be a float in [0, 1]; got {final_fraction}")
    return {"step": step, "steps": steps, "lr": learning_rate(lr), "warmup": count("warmup", warmup),
            "final_fraction": final_fraction}, None


def train_args(num_layers, seed, steps, lr, batch_size, dtype, eval_every, probe_every, progress, threads):
    """Arguments of :func:`mhattn.learn.train.train`: every one checked before the first step."""
    return {"num_layers": positive_int("num_layers", num_layers), "seed": check_seed(seed),
            "steps": positive_int("steps", steps), "lr": learning_rate(lr),
            "batch_size": positive_int("batch_size", batch_size), "dtype": float_dtype(dtype),
            "eval_every": positive_int("eval_every", eval_every),
            "probe_every": positive_int("probe_every", probe_every), "progress": flag("progress", progress),
            "threads": positive_int("threads", threads)}, None


def initial_model_args(num_layers, seed):
    """Arguments of :func:`mhattn.learn.train.initial_model`."""
    return {"num_layers": positive_int("num_layers", num_layers), "seed": check_seed(seed)}, None


# --- mhattn.learn.generate -------------------------------------------------------------------------


def generate_args(model, prompt, num_tokens, temperature, seed, use_cache):
    """Arguments of :func:`mhattn.learn.generate.generate`: a prompt the context holds, a finite temperature >= 0."""
    model = model_like(model)
    parameters(model)
    prompt = check_tokens(prompt, model.vocab, model.max_len, "prompt")
    if prompt.ndim != 1:
        raise ValueError(f"prompt must be one sequence of token ids, shape (prompt_len,); got shape {prompt.shape}")
    num_tokens = integer("num_tokens", num_tokens, "an int >= 0")
    if num_tokens < 0 or len(prompt) + num_tokens > model.max_len + 1:
        raise ValueError(f"num_tokens must be in [0, max_len + 1 - prompt_len = {model.max_len + 1 - len(prompt)}]; "
                         f"got {num_tokens}")
    temperature = real_number("temperature", temperature, "a float >= 0")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite float >= 0; got {temperature}")
    return {"model": model, "prompt": prompt, "num_tokens": num_tokens, "temperature": temperature,
            "seed": check_seed(seed), "use_cache": flag("use_cache", use_cache)}, None
