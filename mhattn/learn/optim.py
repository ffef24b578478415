"""Adam, the optimiser of notebooks 07 and 09."""

import math

import numpy as np

from .. import checks

LEARNING_RATE = 3e-3  #: Adam's default step size


def _fraction(name, value):
    """``value`` as a float in ``[0, 1)``: a moment's decay (1 would never move from 0, nor correct it)."""
    value = checks.real_number(name, value, "a float in [0, 1)")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a float in [0, 1); got {value}")
    return float(value)


class Adam:
    r"""Adam (Kingma & Ba 2015): per-weight step sizes from running moments of the gradient.

    .. math::

        m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad
        v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
        \theta \leftarrow \theta - \text{lr}\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    Parameters
    ----------
    params : dict of ndarray
        Float arrays, updated in place by :meth:`step`.
    lr : float > 0
    beta1, beta2 : float in ``[0, 1)``
        The decay of the moments; 1 would divide by ``1 - beta**t = 0``.
    eps : float > 0
        Keeps the denominator above 0 where a gradient has been 0 so far.
    """

    def __init__(self, params, lr=LEARNING_RATE, beta1=0.9, beta2=0.999, eps=1e-8):
        lr = checks.learning_rate(lr)
        beta1, beta2 = _fraction("beta1", beta1), _fraction("beta2", beta2)
        eps = checks.real_number("eps", eps, "a finite float > 0")
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"eps must be a finite float > 0; got {eps}")
        if not isinstance(params, dict) or not params:
            raise TypeError(f"params must be a non-empty dict of float arrays (model.parameters()); got {params!r}")
        for name, p in params.items():
            if not isinstance(p, np.ndarray) or isinstance(p, np.ma.MaskedArray) or p.dtype.kind != "f":
                raise TypeError(f"params[{name!r}] must be a float ndarray, updated in place; got {p!r}")
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, float(eps)
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.t = 0

    def step(self, grads):
        """Move every parameter one step against its gradient.

        ``grads`` holds one finite array per parameter, of its shape. Every gradient is checked
        before any parameter moves: a refused step changes nothing.
        """
        grads = self.check_grads(grads)
        self.t += 1
        correction1, correction2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t  # early averages start at 0
        for name, p in self.params.items():
            g = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * g  # mean of g
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * g * g  # mean of g^2
            p -= self.lr * (self.m[name] / correction1) / (np.sqrt(self.v[name] / correction2) + self.eps)

    def check_grads(self, grads):
        """``grads`` as ``{name: float array}``, one per parameter, each of its shape and finite; or an error."""
        if not isinstance(grads, dict):
            raise TypeError(f"grads must be a dict of arrays, one per parameter; got {type(grads).__name__}")
        missing, unknown = sorted(set(self.params) - set(grads)), sorted(set(grads) - set(self.params))
        if missing or unknown:
            raise ValueError(f"grads must have the parameters' names {sorted(self.params)}; missing {missing}, "
                             f"unknown {unknown}")
        checked = {}
        for name, p in self.params.items():
            g = checks.real_array(f"grads[{name!r}]", grads[name])
            if g.shape != p.shape:
                raise ValueError(f"grads[{name!r}] must have the parameter's shape {p.shape}; got shape {g.shape}")
            checked[name] = checks.finite(f"grads[{name!r}]", g)
        return checked
