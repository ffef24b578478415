"""Adam, the optimiser of notebooks 08 and 09."""

import numpy as np

from ..checks import checked, training

LEARNING_RATE = 3e-3  #: Adam's default step size


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

    Examples
    --------
    >>> params = {"w": np.array([1.0, -2.0])}
    >>> optimizer = Adam(params, lr=0.1)
    >>> optimizer.t
    0
    """

    @checked(training.adam_args)
    def __init__(self, params, lr=LEARNING_RATE, beta1=0.9, beta2=0.999, eps=1e-8):
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, eps
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.t = 0

    @checked(training.adam_step_args)
    def step(self, grads):
        """Move every parameter one step against its gradient.

        ``grads`` holds one finite array per parameter, of its shape. The gradients and the
        parameters (writable float arrays of their first shapes) are checked before anything
        moves: a refused step changes no parameter, no moment and not the step counter.

        Examples
        --------
        >>> params = {"w": np.array([1.0, -2.0])}
        >>> optimizer = Adam(params, lr=0.1)
        >>> optimizer.step({"w": np.array([0.5, -0.5])})
        >>> params["w"].round(3), optimizer.t  # the first step moves each weight by about lr
        (array([ 0.9, -1.9]), 1)
        """
        self.t += 1
        correction1, correction2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t  # early averages start at 0
        for name, p in self.params.items():
            g = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * g  # mean of g
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * g * g  # mean of g^2
            p -= self.lr * (self.m[name] / correction1) / (np.sqrt(self.v[name] / correction2) + self.eps)
