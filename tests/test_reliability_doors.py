"""Which calls are checked: every call whose arguments come from a caller, even from inside mhattn.

Only the chapter's layers calling each other (softmax inside attention, the engine's tiles)
skip the checks. The package's public objects built on the layers (the model, the trainer,
the explorer) pass arguments that came from their own callers, so their calls are checked.
The calls below run with the calling module's name set, as Python sees it.
"""

import numpy as np
import pytest

from mhattn import MultiHeadAttention, softmax


def call_from(module_name, source, **names):
    """Run ``source`` as if written in the module ``module_name``; return its ``result``."""
    scope = {"__name__": module_name} | names
    exec(compile(source, f"<{module_name}>", "exec"), scope)  # noqa: S102 - a fixed test snippet
    return scope["result"]


NAN_X = np.full((1, 2, 4), np.nan)


@pytest.mark.parametrize("caller", ["mhattn.learn.model", "mhattn.learn.train", "mhattn.explorer.frame", "mhattn.learn.circuits", "user"])
def test_calls_from_the_public_objects_are_checked(caller):
    mha = MultiHeadAttention(d_model=4, num_heads=2)
    with pytest.raises(ValueError, match="x must be finite"):
        call_from(caller, "result = mha(x)", mha=mha, x=NAN_X)


@pytest.mark.parametrize("caller", ["mhattn.core.attention", "mhattn.core.grad", "mhattn.engine.blocks"])
def test_calls_between_layers_are_trusted(caller):
    scores = np.array([[0.0, np.log(3.0)]])
    result = call_from(caller, "result = softmax(scores, -1)", softmax=softmax, scores=scores)
    np.testing.assert_allclose(result, [[0.25, 0.75]], rtol=1e-15)
    with pytest.raises(AttributeError):  # no check turned the list into an array: the caller is trusted
        call_from(caller, "result = softmax([[0.0, 1.0]], -1)", softmax=softmax)


def test_a_module_named_like_a_layer_prefix_is_not_trusted():
    with pytest.raises(ValueError, match="x must not contain NaN"):
        call_from("mhattn.softmax_extra", "result = softmax(x, -1)", softmax=softmax, x=np.array([np.nan]))
