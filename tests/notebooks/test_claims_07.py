"""Every number and comparison that notebook 07's prose states, recomputed from the shipped checkpoints.

Each test names the notebook section whose prose it checks and uses the notebook's own seeds,
so the prose and the outputs it describes cannot drift apart. Each number is checked against
the baseline the prose compares it to.
"""

import numpy as np
import pytest

from mhattn import MultiHeadAttention, causal_mask, multihead_vjp, padding_mask
from mhattn.learn.circuits import loss_report, measure
from mhattn.learn.shipped import load_trained, training_record
from mhattn.learn.task import determined_positions, repeated_positions
from mhattn.learn.train import (
    BATCH_SIZE,
    EDGE_SHARE,
    EVAL_EVERY,
    FINAL_LR_FRACTION,
    FORMING_STEPS,
    LEARNING_RATE,
    STEPS,
    WARMUP,
)
from mhattn.learn.training_probes import PROBE_SIZE


@pytest.fixture(scope="module")
def one_layer():
    return load_trained(1)


# --- section 2: central differences -------------------------------------------------------------


def test_2_the_best_step_is_within_an_order_of_magnitude_of_eps_cubed_root():
    """The notebook's gradient check, step by step: the error is smallest within 10x of eps^(1/3)."""
    mha = MultiHeadAttention(d_model=16, num_heads=4, seed=0)
    x = np.random.default_rng(1).standard_normal((2, 6, 16))
    keep = padding_mask([6, 4], 6)
    mask = causal_mask(6) & keep & keep.transpose(0, 1, 3, 2)
    steps = np.logspace(-9, -2, 15)

    def loss(array, index, value, G):
        saved, array[index] = array[index], value
        try:
            return np.sum(mha(x, mask)[0] * G)
        finally:
            array[index] = saved

    errors = []
    for h in steps:  # the notebook's draws: seed 0, G first, then 8 entries of x, W_qkv, W_o in turn
        rng = np.random.default_rng(0)
        G = rng.standard_normal(x.shape)
        grads = multihead_vjp(x, mha.W_qkv, mha.W_o, mha.num_heads, mask)[2](G)  # as the notebook calls it
        worst = 0.0
        for name, array in (("x", x), ("W_qkv", mha.W_qkv), ("W_o", mha.W_o)):
            for index in [tuple(rng.integers(0, size) for size in array.shape) for _ in range(8)]:
                numeric = (loss(array, index, array[index] + h, G) - loss(array, index, array[index] - h, G)) / (2 * h)
                worst = max(worst, abs(numeric - grads[name][index]) / np.abs(grads[name]).max())
        errors.append(worst)
    errors = np.array(errors)
    best = steps[errors.argmin()]
    assert 0.1 < best / np.finfo(float).eps ** (1 / 3) < 10
    assert errors[-1] > 1000 * errors.min()
    # the curve against h: falling at the right (truncation), rising at the left (rounding)
    assert errors[-1] > errors[-3] > errors[-5] and errors[0] > errors[2] > errors[4]


# --- section 3: the task, and one layer -------------------------------------------------------


def test_3_about_one_position_in_five_is_ambiguous(batch):
    tokens, n, offset, gap = batch
    share = 1 - determined_positions(tokens, n, offset, gap).sum() / repeated_positions(n, 32, offset, gap).sum()
    assert 0.15 < share < 0.25


def test_3_the_answer_sits_at_t_minus_n_minus_g_plus_1(batch):
    """Position t of the second copy predicts token t + 1, the one after the earlier copy: j = t - n - g + 1."""
    tokens, n, offset, gap = batch
    rows, columns = np.nonzero(repeated_positions(n, 32, offset, gap))  # second copy but its last position
    j = columns - n[rows] - gap[rows] + 1
    assert np.array_equal(tokens[rows, j], tokens[rows, columns + 1])
    assert np.array_equal(tokens[rows, j - 1], tokens[rows, columns])  # the earlier copy of token t
    distances = n[rows] + gap[rows]
    assert len(np.unique(distances)) > 20  # "no fixed distance finds j"


@pytest.fixture(scope="module")
def one_layer_guesses(one_layer, batch):
    """The notebook's cell: per determined position, is the guess an earlier token, a first-copy token; the baseline."""
    tokens, n, offset, gap = batch
    guess = one_layer.predict(tokens)
    seen, first, drawn, uniform = [], [], [], []
    for b, t in zip(*np.nonzero(determined_positions(tokens, n, offset, gap)), strict=True):
        block = tokens[b, offset[b] : offset[b] + n[b]]  # the first copy, where the task puts it
        earlier = tokens[b, :t]
        seen.append(guess[b, t] in earlier)
        first.append(guess[b, t] in block)
        drawn.append(np.isin(earlier, block).mean())  # the token of a random earlier position
        uniform.append(len(np.unique(earlier)) / 32)  # a uniform guess lands on an earlier token
    return np.mean(seen), np.mean(first), np.mean(drawn), np.mean(uniform)


def test_3_one_layer_is_right_about_one_time_in_five(one_layer):
    assert 0.15 < measure(one_layer)["accuracy"] < 0.25  # against 1/32 for a uniform guess


def test_3_one_layer_guesses_earlier_tokens_nearly_always_against_less_than_half_for_a_uniform_guess(
        one_layer_guesses):
    seen, _, _, uniform = one_layer_guesses
    assert 0.975 <= seen < 0.985  # "98 %"
    assert uniform < 0.5  # "less than half the time"


def test_3_one_layer_guesses_first_copy_tokens_no_more_often_than_a_random_earlier_position_would(
        one_layer_guesses):
    _, first, drawn, _ = one_layer_guesses
    assert 0.715 <= first < 0.725  # "72 %"
    assert 0.765 <= drawn < 0.775  # "77 %"
    assert first < drawn  # "a little fewer"


# --- section 4: training ---------------------------------------------------------------------


def test_4_the_recipe_the_prose_states():
    assert (STEPS, WARMUP, LEARNING_RATE, FINAL_LR_FRACTION) == (3500, 100, 1e-2, 0.1)
    assert (BATCH_SIZE, FORMING_STEPS, EDGE_SHARE) == (64, 1000, 0.1)  # "64 sequences", "the first 1000", "one in ten"
    assert (EVAL_EVERY, PROBE_SIZE) == (5, 256)  # "every 5 steps", "256 fixed sequences"
    history = load_trained().history
    assert np.all(np.diff(history["step"][1:]) == EVAL_EVERY) and history["token_loss"].shape[1] == 3
    record = training_record(2)
    assert (record["steps"], record["batch_size"], record["seed"]) == (3500, 64, 0)


@pytest.fixture(scope="module")
def curves(model, one_layer):
    history, one = model.history, one_layer.history
    jump = history["step"][np.argmax(history["accuracy"] > 0.9)]
    return history, one, jump


def mean_over(history, key, first, last, axis="step"):
    chosen = (history[axis] >= first) & (history[axis] <= last)
    return history[key][chosen].mean(axis=0)


def test_4_the_accuracy_is_a_slow_ramp_then_a_jump(curves):
    history, one, jump = curves
    assert 1500 < jump < 1600  # "more than a thousand steps"; the alt text's "around step 1550"
    assert 0.04 < mean_over(history, "accuracy", 200, 400) < 0.05  # "about 0.045"
    assert 0.145 <= mean_over(history, "accuracy", 1400, 1500) < 0.155  # "0.15"
    assert mean_over(history, "accuracy", 1400, 1500) < one["accuracy"][-20:].mean()  # "still below the one layer"
    assert 0.165 <= one["accuracy"][-20:].mean() < 0.175  # "0.17"
    rise = history["step"][np.argmax(history["accuracy"] > 0.25)]
    assert 0 < jump - rise <= 100  # "within about a hundred steps"


def test_4_the_loss_stays_within_a_few_hundredths_of_log_32_on_the_ramp(curves):
    history, _, _ = curves
    loss_at = dict(zip(history["step"], history["loss"], strict=True))
    assert round(loss_at[5]) == 5 and round(loss_at[50], 1) in (3.5, 3.6)  # the alt text: "from about 5 to near 3.5"
    ramp = (history["step"] > 100) & (history["step"] <= 1400)
    assert np.abs(history["loss"][ramp].reshape(-1, 10).mean(axis=1) - np.log(32)).max() < 0.05  # 50-step means


def test_4_the_induction_loss_falls_from_step_700_long_before_the_jump(curves):
    """The precursor: the induction loss moves while the accuracy on the training task creeps."""
    history, _, jump = curves
    step, loss = history["probe_step"], history["induction_loss"]
    before = loss[(step >= 200) & (step <= 600)]
    assert np.ptp(before) < 0.05  # flat before
    at = {s: loss[step == s][0] for s in (700, 900, 1300)}
    assert before.mean() - at[700] < 0.1 < before.mean() - at[900]  # the fall begins between 700 and 900
    assert round(at[1300], 1) == 3.1  # "to 3.1 by step 1300"
    creep = [round(mean_over(history, "accuracy", s - 50, s + 50), 2) for s in (700, 1300)]
    assert creep == [0.06, 0.11]  # "only creeps (0.06 to 0.11)"
    assert 3.435 <= before.mean() < 3.445  # "from 3.44"
    assert jump - 1300 > 100


def test_4_token_losses_drop_with_the_phase_change(curves):
    history, _, jump = curves
    step = history["probe_step"]
    before, after = (step > 1) & (step < jump - 200), step > jump + 200  # step 1 left out, as the figure does
    token_loss = history["token_loss"]
    assert abs(token_loss[before, 0].mean() - token_loss[after, 0].mean()) < 0.1  # token 3: nothing to copy
    assert abs(token_loss[after, 0].mean() - np.log(32)) < 0.1  # "stays near log 32"
    for column in (1, 2):  # tokens 16 and 31 fall "by about a third of a nat" (the alt text)
        drop = token_loss[before, column].mean() - token_loss[-20:, column].mean()
        assert 0.25 <= drop <= 0.42 and token_loss[after, column].mean() < token_loss[before, column].mean() - 0.25
    assert history["induction_loss"][after].mean() < history["induction_loss"][before].mean() - 2


def test_4_icl_score_on_the_training_task_and_the_induction_loss(model, one_layer):
    report, one = loss_report(model), loss_report(one_layer)
    assert -0.35 < report["icl_score"] < -0.25  # "near -0.3 nats"
    assert 0.4 < report["induction_loss"] < 0.55  # "near half a nat"
    assert abs(one["icl_score"]) < 0.1 and one["induction_loss"] > 2


def test_4_each_icl_score_is_named_for_what_it_averages_over(model):
    """measure() reports the score on repeated random tokens under the name loss_report gives it there."""
    result, report = measure(model), loss_report(model)
    assert "icl_score" not in result and "repeated_icl_score" in result
    assert report["repeated_icl_score"] < report["icl_score"] - 1  # repeated tokens: far more to copy
