"""Adam refuses settings and gradients that would write NaN into the weights, before it moves any of them."""

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn.learn.optim import Adam


def _params():
    return {"a": np.array([1.0, -2.0, 3.0]), "b": np.array([[0.5, 0.25]])}


def _reference_steps(params, grads_list, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8):
    """Kingma & Ba (2015), Algorithm 1, written out per parameter."""
    params = {k: v.copy() for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    for t, grads in enumerate(grads_list, start=1):
        for k in params:
            m[k] = beta1 * m[k] + (1 - beta1) * grads[k]
            v[k] = beta2 * v[k] + (1 - beta2) * grads[k] ** 2
            params[k] = params[k] - lr * (m[k] / (1 - beta1**t)) / (np.sqrt(v[k] / (1 - beta2**t)) + eps)
    return params


@pytest.mark.parametrize(("settings", "name"), [({"beta1": 1.0}, "beta1"), ({"beta1": -0.1}, "beta1"),
                                                ({"beta2": 1.0}, "beta2"), ({"eps": 0.0}, "eps"),
                                                ({"eps": float("nan")}, "eps"), ({"beta1": True}, "beta1")])
def test_settings_that_divide_by_zero_are_refused(settings, name):
    with pytest.raises((TypeError, ValueError), match=name):
        Adam(_params(), **settings)


GOOD = {"a": np.array([0.1, 0.2, -0.3]), "b": np.array([[1.0, -1.0]])}


@pytest.mark.parametrize(("bad", "name"), [
    ({"a": GOOD["a"]}, "missing"),  # half a step would move only a
    ({"a": GOOD["a"], "b": np.array([1.0, 2.0])}, "grads\\['b'\\]"),
    ({"a": np.ones(4), "b": GOOD["b"]}, "grads\\['a'\\]"),  # the same rank, another length
    ({"a": np.array([np.nan, 0, 0]), "b": GOOD["b"]}, "grads\\['a'\\]"),
    ({"a": GOOD["a"], "b": np.array([[np.inf, 0]])}, "grads\\['b'\\]"),
])
def test_a_refused_step_changes_nothing_and_later_steps_are_right(bad, name):
    params = _params()
    optimizer = Adam(params, lr=0.1)
    optimizer.step(GOOD)
    with pytest.raises(ValueError, match=name):
        optimizer.step(bad)
    optimizer.step(GOOD)
    expected = _reference_steps(_params(), [GOOD, GOOD], lr=0.1)
    for key in params:
        np.testing.assert_allclose(params[key], expected[key], rtol=1e-14)


def test_a_read_only_parameter_is_refused_before_any_parameter_or_moment_moves():
    params = _params()
    optimizer = Adam(params, lr=0.1)
    optimizer.step(GOOD)
    before = {k: v.copy() for k, v in params.items()}
    moments = {k: (optimizer.m[k].copy(), optimizer.v[k].copy()) for k in params}
    params["b"].flags.writeable = False  # the last parameter: every earlier one would have moved
    with pytest.raises(ValueError, match=r"params\['b'\] must be writable"):
        optimizer.step(GOOD)
    assert optimizer.t == 1
    for key in params:
        np.testing.assert_array_equal(params[key], before[key])
        np.testing.assert_array_equal(optimizer.m[key], moments[key][0])
        np.testing.assert_array_equal(optimizer.v[key], moments[key][1])


@pytest.mark.parametrize(("lr", "grads", "name"), [
    (1e308, GOOD, r"lr = 1e\+308 could move params\['a'\]"),  # the second step would pass float64's largest
    (0.1, {"a": np.array([1e200, 0, 0]), "b": GOOD["b"]}, r"grads\['a'\] must stay below 1.34e\+154"),  # g * g
])
def test_a_step_that_would_overflow_is_refused_and_changes_nothing(lr, grads, name):
    params = _params()
    optimizer = Adam(params, lr=lr)
    optimizer.step(GOOD)  # moves every weight by lr exactly: still finite
    before = {k: v.copy() for k, v in params.items()}
    moments = {k: (optimizer.m[k].copy(), optimizer.v[k].copy()) for k in params}
    with pytest.raises(ValueError, match=name):
        optimizer.step(grads)
    assert optimizer.t == 1 and all(np.isfinite(p).all() for p in params.values())
    for key in params:
        np.testing.assert_array_equal(params[key], before[key])
        np.testing.assert_array_equal(optimizer.m[key], moments[key][0])
        np.testing.assert_array_equal(optimizer.v[key], moments[key][1])


@pytest.mark.parametrize(("beta1", "beta2"), [(0.9, 0.999), (0.5, 0.6), (0.99, 0.9)])  # beta1**2 / beta2 < 1, > 1
def test_the_overflow_checks_bound_holds_for_any_gradients(beta1, beta2):
    """|m_hat| / sqrt(v_hat) never exceeds adam_ratio_bound: the moments' recurrences run here in a plain loop."""
    from mhattn.checks.training import adam_ratio_bound

    rng = np.random.default_rng(20)
    for history in range(200):
        scales = 10.0 ** rng.uniform(-6, 6, size=40)  # gradients of wildly different sizes, as a bound must allow
        g = rng.standard_normal(40) * scales * (rng.random(40) < 0.7)  # some exactly 0
        m = v = 0.0
        for t, g_t in enumerate(g, start=1):
            m, v = beta1 * m + (1 - beta1) * g_t, beta2 * v + (1 - beta2) * g_t * g_t
            if v > 0:
                ratio = abs(m / (1 - beta1**t)) / np.sqrt(v / (1 - beta2**t))
                assert ratio <= adam_ratio_bound(t, beta1, beta2) * (1 + 1e-12), (history, t)
    assert adam_ratio_bound(1, beta1, beta2) == pytest.approx(1.0, rel=1e-12)  # the first step moves by lr exactly


def test_a_parameter_whose_shape_changed_is_refused_before_anything_moves():
    params = _params()
    optimizer = Adam(params, lr=0.1)
    params["b"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"params\['b'\] must keep its shape \(1, 2\)"):
        optimizer.step({"a": GOOD["a"], "b": np.zeros(5)})
    assert optimizer.t == 0 and (params["a"] == _params()["a"]).all()


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.Adam,
        dict(params={'a': np.full((3,), 0.0)}),
        params=[[np.full((3,), 0.0)]]),
    *refusals(
        (lambda **kw: mhattn.learn.Adam({'a': np.zeros(3)}).step(**kw)),
        dict(grads={'a': np.full((3,), 1.0)}),
        grads=[{'a': np.full((2,), 1.0)}, {'a': np.full((3,), np.nan)},
               {'a': np.full((3,), 1.0), 'b': np.full((3,), 1.0)}, [np.full((3,), 1.0)],
               {'a': np.ma.masked_array(np.full((3,), 1.0))}]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
