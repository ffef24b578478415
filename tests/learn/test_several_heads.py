"""Why several heads (mhattn.learn.several_heads, notebook 08): the task, the gradient, the experiment.

Every test's name contains "several_heads": ``pytest -k several_heads`` selects them all.
"""

import os

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn.core.masks import causal_mask
from mhattn.learn import head_probes as hp
from mhattn.learn import several_heads as sh

#: the doors the package shows the free functions through (mhattn.learn), by the functions' names
doors = {"slot_accuracy": mhattn.learn.slot_accuracy, "loss_and_grads": mhattn.learn.slot_loss_and_grads,
         "logits_with_weights": mhattn.learn.logits_with_weights, "offset_profile": mhattn.learn.offset_profile,
         "two_slot_batch": mhattn.learn.two_slot_batch, "train": mhattn.learn.train_heads,
         "without_heads": mhattn.learn.without_heads, "experiment": mhattn.learn.experiment}


def test_several_heads_targets_are_the_tokens_one_and_two_back_by_a_plain_loop():
    tokens, targets = sh.two_slot_batch(np.random.default_rng(5), 7, vocab=11, seq_len=9)
    assert tokens.shape == (7, 9) and targets.shape == (2, 7, 9)
    assert tokens.min() >= 0 and tokens.max() < 11
    for b in range(7):
        for t in range(sh.FIRST_SCORED, 9):
            assert targets[0, b, t] == tokens[b, t - 1]
            assert targets[1, b, t] == tokens[b, t - 2]


def loss_by_hand(model, tokens, targets):
    """The training loss from the module's forward and a log-softmax written out here."""
    logits, _ = model(tokens)  # (2, batch, seq_len, vocab)
    total = 0.0
    for slot in range(2):
        rows = logits[slot, :, sh.FIRST_SCORED :].reshape(-1, model.vocab)
        labels = targets[slot, :, sh.FIRST_SCORED :].reshape(-1)
        log_z = np.log(np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1)) + rows.max(axis=1)
        total += np.mean(log_z - rows[np.arange(len(labels)), labels])
    return total


@pytest.mark.parametrize("num_heads", [1, 2])
def test_several_heads_training_gradient_matches_finite_differences(num_heads):
    model = sh.TwoSlotModel(num_heads, vocab=5, seq_len=5, d_model=4, seed=3)
    tokens, targets = sh.two_slot_batch(np.random.default_rng(1), 3, vocab=5, seq_len=5)
    loss, grads = sh.loss_and_grads(model, tokens, targets)
    assert loss == pytest.approx(loss_by_hand(model, tokens, targets), rel=1e-12)
    # Central differences err by ~ step**2 * |f'''| + eps * |f| / step = 1e-12 + 2e-16 * 3 / 1e-6, under 1e-9:
    # atol 1e-8 leaves a factor 10; rtol 1e-5 covers the largest gradients (order 1).
    step = 1e-6
    for name, param in model.parameters().items():
        assert grads[name].shape == param.shape, name
        numeric = np.zeros_like(param)
        for index in np.ndindex(param.shape):
            saved = param[index]
            param[index] = saved + step
            up = loss_by_hand(model, tokens, targets)
            param[index] = saved - step
            down = loss_by_hand(model, tokens, targets)
            param[index] = saved
            numeric[index] = (up - down) / (2 * step)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)


def test_several_heads_unscored_positions_and_unused_tokens_get_no_gradient():
    model = sh.TwoSlotModel(2, vocab=6, seq_len=5, d_model=4, seed=0)
    tokens = np.array([[0, 1, 2, 3, 0], [1, 2, 3, 0, 1]])  # tokens 4 and 5 never appear
    targets = np.stack([np.roll(tokens, k, axis=1) for k in sh.OFFSETS])
    _, grads = sh.loss_and_grads(model, tokens, targets)
    assert not grads["embed"][4:].any() and grads["embed"][:4].all()
    # Changing the labels of positions 0 and 1 (never scored) changes nothing.
    other = targets.copy()
    other[:, :, : sh.FIRST_SCORED] = 5
    _, other_grads = sh.loss_and_grads(model, tokens, other)
    for name in grads:
        np.testing.assert_array_equal(grads[name], other_grads[name])


@pytest.mark.parametrize("d_model", [8, 32])
def test_several_heads_parameter_count_and_initial_numbers_do_not_depend_on_num_heads(d_model):
    vocab, seq_len = 16, 16
    expected = vocab * d_model + seq_len * d_model + 4 * d_model**2 + 2 * d_model * vocab
    first = sh.TwoSlotModel(1, d_model=d_model, seed=7)
    for num_heads in [1, 2, 4, 8]:
        model = sh.TwoSlotModel(num_heads, d_model=d_model, seed=7)
        assert model.parameter_count() == expected
        for name, param in model.parameters().items():
            np.testing.assert_array_equal(param, first.parameters()[name], err_msg=name)


def test_several_heads_forward_equals_a_loop_over_positions_and_heads():
    model = sh.TwoSlotModel(2, vocab=7, seq_len=6, d_model=4, seed=2)
    tokens, _ = sh.two_slot_batch(np.random.default_rng(0), 2, vocab=7, seq_len=6)
    logits, weights = model(tokens)
    W_q, W_k, W_v = np.split(model.attention.W_qkv, 3, axis=1)
    d_k = model.attention.d_k
    for b in range(2):
        h = model.embed[tokens[b]] + model.pos  # (seq_len, d_model)
        for t in range(6):
            heads = []
            for head in range(2):
                cols = slice(head * d_k, (head + 1) * d_k)
                scores = np.array([h[t] @ W_q[:, cols] @ (h[j] @ W_k[:, cols]) for j in range(t + 1)]) / np.sqrt(d_k)
                p = np.exp(scores - scores.max())
                p /= p.sum()
                np.testing.assert_allclose(weights[b, head, t, : t + 1], p, rtol=1e-12, atol=1e-15)
                assert not weights[b, head, t, t + 1 :].any()
                heads.append(sum(p[j] * (h[j] @ W_v[:, cols]) for j in range(t + 1)))
            out = np.concatenate(heads) @ model.attention.W_o
            for slot in range(2):
                np.testing.assert_allclose(logits[slot, b, t], out @ model.readouts[slot], rtol=1e-10, atol=1e-12)


def test_several_heads_streams_are_independent_and_evaluation_sequences_fresh():
    weights_seed, training, evaluation = sh.streams(0)
    again = sh.streams(0)
    assert weights_seed == again[0]
    train_tokens = np.concatenate([sh.two_slot_batch(training, sh.BATCH_SIZE)[0] for _ in range(sh.STEPS)])
    eval_tokens, _ = hp.evaluation_batch(0, 256)
    np.testing.assert_array_equal(eval_tokens, sh.two_slot_batch(again[2], 256)[0])  # reproducible
    seen = {row.tobytes() for row in train_tokens}
    assert not any(row.tobytes() in seen for row in eval_tokens), "an evaluation sequence was trained on"
    assert not np.array_equal(sh.streams(1)[2].integers(16, size=64), sh.streams(0)[2].integers(16, size=64))


def test_several_heads_offset_profile_on_hand_built_weights():
    seq_len = 6
    previous = np.zeros((seq_len, seq_len))
    previous[0, 0] = 1.0
    previous[np.arange(1, seq_len), np.arange(seq_len - 1)] = 1.0  # every query on its previous token
    uniform = causal_mask(seq_len) / causal_mask(seq_len).sum(axis=1, keepdims=True)
    weights = np.stack([previous, uniform])[None]  # (1, 2, seq_len, seq_len)
    profile = hp.offset_profile(weights, max_offset=3)
    np.testing.assert_array_equal(profile[0], [0.0, 1.0, 0.0, 0.0])
    queries = np.arange(3, seq_len)  # t >= max_offset: 1 / (t + 1) on each visible key
    np.testing.assert_allclose(profile[1], np.full(4, np.mean(1.0 / (queries + 1))), rtol=1e-15)


def test_several_heads_model_rejects_bad_tokens_with_clear_errors():
    model = sh.TwoSlotModel(2)
    with pytest.raises(ValueError, match=r"tokens must be ints of shape \(batch, seq_len = 16\)"):
        model(np.zeros((2, 15), dtype=int))
    with pytest.raises(ValueError, match=r"tokens must be integer ids in \[0, 16\).*got values 1 to 16"):
        model(np.arange(1, 17)[None])
    with pytest.raises(TypeError, match="tokens must be integer ids.*got dtype float64"):
        model(np.zeros((1, 16)))
    with pytest.raises(ValueError, match="seq_len must be at least 3"):
        sh.TwoSlotModel(1, seq_len=2)
    with pytest.raises(ValueError, match="num_heads"):
        sh.TwoSlotModel(3)
    tokens, targets = sh.two_slot_batch(np.random.default_rng(0), 2)
    with pytest.raises(ValueError, match=r"targets must have shape \(2, 2, 16\)"):
        doors["slot_accuracy"](model, tokens, targets[0])
    with pytest.raises(ValueError, match=r"targets must have shape \(2, 2, 16\)"):
        doors["loss_and_grads"](model, tokens, targets[:1])
    with pytest.raises(ValueError, match=r"weights must have shape .* = \(2, 2, 16, 16\); got \(2, 1, 16, 16\)"):
        doors["logits_with_weights"](model, tokens, np.zeros((2, 1, 16, 16)))
    with pytest.raises(ValueError, match=r"max_offset must be an int in \[0, 15\]; got 16"):
        doors["offset_profile"](np.zeros((1, 1, 16, 16)), max_offset=16)
    with pytest.raises(ValueError, match="batch_size must be a positive int; got 0"):
        doors["two_slot_batch"](np.random.default_rng(0), 0)
    for lr in (-0.1, 0.0, np.inf, True):
        with pytest.raises((TypeError, ValueError), match="lr must be a finite float > 0; got"):
            doors["train"](1, lr=lr)


def test_several_heads_logits_with_the_models_own_weights_equal_its_forward():
    model = sh.TwoSlotModel(4, seed=1)
    tokens, _ = sh.two_slot_batch(np.random.default_rng(3), 5)
    logits, weights = model(tokens)
    np.testing.assert_allclose(hp.logits_with_weights(model, tokens, weights), logits, rtol=1e-12, atol=1e-12)


def test_several_heads_without_heads_equals_zero_weights_and_leaves_the_model_alone():
    model = sh.TwoSlotModel(4, seed=2)
    W_o = model.attention.W_o.copy()
    tokens, _ = sh.two_slot_batch(np.random.default_rng(4), 3)
    _, weights = model(tokens)
    for heads in ([0], [3], [1, 2]):
        silenced = weights.copy()
        silenced[:, heads] = 0.0  # a head that takes nothing from any key outputs zeros
        expected = hp.logits_with_weights(model, tokens, silenced)
        np.testing.assert_allclose(hp.without_heads(model, heads)(tokens)[0], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.attention.W_o, W_o)
    with pytest.raises(ValueError, match=r"heads must be an int in \[0, 3\]; got 4"):
        doors["without_heads"](model, [4])


@pytest.fixture(scope="module")
def several_heads_experiment():
    """The notebook's experiment: 1, 2 and 4 heads, seeds 0, 1, 2, measured on fresh sequences."""
    return hp.experiment(head_counts=(1, 2, 4), seeds=(0, 1, 2))


@pytest.mark.parametrize("num_heads", [2, 4])
def test_several_heads_two_or_more_heads_report_both_tokens_in_every_seed(several_heads_experiment, num_heads):
    _, accuracy = several_heads_experiment
    for seed in (0, 1, 2):
        assert accuracy[num_heads, seed].min() >= 0.95, f"{num_heads} heads, seed {seed}: {accuracy[num_heads, seed]}"


def test_several_heads_one_head_gets_one_slot_and_misses_the_other_in_every_seed(several_heads_experiment):
    """Notebook 08, sections 5 and 7: "the other 0.20 to 0.25 of the time", "three to four times chance"
    (1 / 16), in every seed; seed 0 gets 0.93 and 0.25."""
    _, accuracy = several_heads_experiment
    chance = 1 / sh.VOCAB
    for seed in (0, 1, 2):
        assert 0.195 <= accuracy[1, seed].min() < 0.255, f"seed {seed}: {accuracy[1, seed]}"
        assert 3 <= round(accuracy[1, seed].min() / chance, 1) <= 4, f"seed {seed}: {accuracy[1, seed]}"
        assert accuracy[1, seed].max() >= 0.9, f"seed {seed}: one slot should be right; {accuracy[1, seed]}"
        assert accuracy[1, seed].argmax() == 0, f"seed {seed}: the notebook says the previous token wins here"
    # The two numbers that section 7 quotes, as printed (two decimals) in section 5's table.
    np.testing.assert_allclose(accuracy[1, 0], [0.93, 0.25], atol=0.005)


def test_several_heads_one_head_averages_and_two_heads_split_the_offsets(several_heads_experiment):
    """Notebook 08, section 6: the single head spreads each row over t - 1 and t - 2; each of two heads takes one."""
    models, _ = several_heads_experiment
    for seed in (0, 1, 2):
        tokens, _ = hp.evaluation_batch(seed, 256)
        one = hp.offset_profile(models[1, seed](tokens)[1])[0]  # (4,): weight on t, t - 1, t - 2, t - 3
        assert one[1] >= 0.3 and one[2] >= 0.3, f"seed {seed}: {one}"
        if seed == 0:  # section 7 quotes the table's "0.47 and 0.41", measured on all 1024 test sequences
            profile = hp.offset_profile(models[1, 0](hp.evaluation_batch(0)[0])[1])[0]
            np.testing.assert_allclose(profile[1:3], [0.47, 0.41], atol=0.005)
        two = hp.offset_profile(models[2, seed](tokens)[1])  # (2, 4)
        assert sorted(two[:, 1:3].argmax(axis=1)) == [0, 1], f"seed {seed}: both heads on one offset: {two}"
        assert two[:, 1:3].max(axis=1).min() >= 0.9, f"seed {seed}: {two}"


def test_several_heads_one_shared_row_halves_and_a_copied_row_loses_a_slot(several_heads_experiment):
    """Notebook 08, section 7 and exercise 3, on the two-head model of seed 0."""
    models, _ = several_heads_experiment
    model = models[2, 0]
    tokens, targets = hp.evaluation_batch(0)
    _, weights = model(tokens)

    def accuracy_with(rows):
        hits = hp.logits_with_weights(model, tokens, rows).argmax(axis=-1) == targets
        return hits[:, :, sh.FIRST_SCORED :].mean(axis=(1, 2))

    shared = accuracy_with(np.broadcast_to(weights.mean(axis=1, keepdims=True), weights.shape))
    assert np.all((shared >= 0.35) & (shared <= 0.65)), shared
    previous_head = hp.offset_profile(weights)[:, 1].argmax()
    assert previous_head == 0, "the notebook's exercise 3 says head 0 reads the previous token"
    copied = weights.copy()
    copied[:, 1 - previous_head] = weights[:, previous_head]
    previous, two_back = accuracy_with(copied)
    assert previous >= 0.95 and two_back <= 0.15, (previous, two_back)


def test_several_heads_one_of_four_heads_can_go_and_none_alone_costs_a_slot(several_heads_experiment):
    """Notebook 08, section 8, on the four-head model of seed 0."""
    models, _ = several_heads_experiment
    model = models[4, 0]
    tokens, targets = hp.evaluation_batch(0)
    removed = np.array([hp.slot_accuracy(hp.without_heads(model, [h]), tokens, targets) for h in range(4)])
    assert (removed.min(axis=1) >= 0.95).any(), removed
    assert removed.min() >= 0.5, removed


def test_several_heads_which_slot_one_head_wins_depends_on_the_seed():
    """Notebook 08, section 5: with seed 5 the single head reports the token two back."""
    accuracy = hp.slot_accuracy(sh.train(1, seed=5), *hp.evaluation_batch(5))
    assert accuracy[1] >= 0.8 and accuracy[0] <= 0.5, accuracy


def test_several_heads_single_head_row_barely_depends_on_the_tokens(several_heads_experiment):
    """Notebook 08, section 7: the weights hardly move between sequences; the mean row changes little."""
    models, accuracy = several_heads_experiment
    model = models[1, 0]
    tokens, targets = hp.evaluation_batch(0)
    _, weights = model(tokens)
    assert weights.std(axis=0).max() < 0.05, weights.std(axis=0).max()
    mean_row = np.broadcast_to(weights.mean(axis=0), weights.shape)
    hits = hp.logits_with_weights(model, tokens, mean_row).argmax(axis=-1) == targets
    with_mean_row = hits[:, :, sh.FIRST_SCORED :].mean(axis=(1, 2))
    assert np.abs(with_mean_row - accuracy[1, 0]).max() <= 0.03, (with_mean_row, accuracy[1, 0])


def readout_exists(vocab, shares, slot):
    """Is there a linear readout that names token ``slot`` of every pair from the fixed mixture?

    The output for tokens ``(a, b)`` at ``t - 1`` and ``t - 2`` is ``shares[0] * v(a) + shares[1] * v(b)``
    plus what the sequences share; a linear readout's logit for ``c`` is then
    ``shares[0] * M[c, a] + shares[1] * M[c, b] + g[c]`` for some matrix ``M`` and vector ``g``, any values.
    Naming ``y = (a, b)[slot]`` for every pair means ``logit[y] - logit[c] >= 1`` for every ``c != y``
    (any strict solution scales to margin 1). A linear program with free ``M`` and ``g`` decides it.
    """
    from scipy.optimize import linprog

    alpha, beta = shares
    rows = []
    for a in range(vocab):
        for b in range(vocab):
            mixture = np.zeros(vocab)
            mixture[a] += alpha
            mixture[b] += beta
            answer = (a, b)[slot]
            for c in range(vocab):
                if c != answer:  # logit[c] - logit[answer] <= -1, as a row over (M.ravel(), g)
                    row = np.zeros((vocab + 1, vocab))
                    row[c] += mixture
                    row[answer] -= mixture
                    row[vocab, c] += 1.0
                    row[vocab, answer] -= 1.0
                    rows.append(row.ravel())
    result = linprog(np.zeros(vocab * (vocab + 1)), A_ub=np.array(rows), b_ub=-np.ones(len(rows)),
                     bounds=(None, None), method="highs")
    assert result.status in (0, 2), result.message  # 0: a readout found, 2: proved infeasible
    return result.status == 0


@pytest.mark.parametrize("shares", [(0.53, 0.47), (0.6, 0.4), (0.9, 0.1), (0.47, 0.41)])
def test_several_heads_with_a_fixed_row_no_linear_readout_names_the_smaller_share_on_every_pair(shares):
    """Notebook 08, section 1: with unequal shares fixed for every sequence, a linear readout can name the larger
    share on every pair of tokens, but none names the smaller one on every pair (it cannot do so reliably)."""
    pytest.importorskip("scipy.optimize")
    assert readout_exists(5, shares, slot=0)  # the larger share (t - 1): yes, e.g. M = identity
    assert not readout_exists(5, shares, slot=1)  # the smaller share: no readout at all
    mixtures = {tuple(shares[0] * np.eye(5)[a] + shares[1] * np.eye(5)[b]) for a in range(5) for b in range(5)}
    assert len(mixtures) == 25  # every pair gives its own mixture: a lookup table (nonlinear) could decode it


def test_several_heads_equal_shares_let_no_linear_readout_name_either_token():
    pytest.importorskip("scipy.optimize")
    assert not readout_exists(5, (0.5, 0.5), slot=0) and not readout_exists(5, (0.5, 0.5), slot=1)


def test_several_heads_the_argument_holds_at_the_notebooks_vocabulary():
    """The same linear program at vocab 16 (section 1's claim is about the notebook's task)."""
    pytest.importorskip("scipy.optimize")
    assert not readout_exists(sh.VOCAB, (0.6, 0.4), slot=1)


@pytest.mark.skipif(
    os.environ.get("CI") != "true" and os.environ.get("MHATTN_LONG_TRAINING") != "1",
    reason="trains two single heads for 3000 steps (~10 s of CPU each, minutes on a busy machine): "
    "set MHATTN_LONG_TRAINING=1 (CI runs it)",
)
def test_several_heads_one_head_trained_ten_times_longer_can_get_both_by_token_dependent_weights():
    """Notebook 08, section 5: ten times longer, seed 0's single head gets both slots; seed 1's still misses one."""
    steps = 10 * sh.STEPS
    assert steps == 3000, "the notebook quotes sh.train(1, seed=0, steps=3000)"
    model = sh.train(1, seed=0, steps=steps)
    tokens, targets = hp.evaluation_batch(0)
    assert hp.slot_accuracy(model, tokens, targets).min() >= 0.9, "seed 0 should get both slots right"
    _, weights = model(tokens)
    t = np.arange(sh.FIRST_SCORED, sh.SEQ_LEN)
    assert weights[:, 0, t, t - 1].std(axis=0).mean() >= 0.1, "its weights should move with the tokens"
    mean_row = np.broadcast_to(weights.mean(axis=0), weights.shape)  # the same row for every sequence
    hits = hp.logits_with_weights(model, tokens, mean_row).argmax(axis=-1) == targets
    assert hits[:, :, sh.FIRST_SCORED :].mean(axis=(1, 2)).min() <= 0.7, "a fixed row should lose a slot"
    missed = hp.slot_accuracy(sh.train(1, seed=1, steps=steps), *hp.evaluation_batch(1))
    assert missed[1] <= 0.5 <= missed[0], f"seed 1 should still miss the token two back: {missed}"


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.two_slot_batch,
        dict(rng=np.random.default_rng(0), batch_size=2),
        seq_len=[0]),
    *refusals(
        mhattn.learn.TwoSlotModel,
        dict(num_heads=2, vocab=6, seq_len=5, d_model=8),
        num_heads=[3],
        seq_len=[0, 2]),
    *refusals(
        (lambda **kw: mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8).forward(**kw)),
        dict(tokens=np.full((3, 5), 0)),
        tokens=[np.full((3, 5), -1000000), np.full((3, 5), 1000000), np.full((1, 3, 5), 0), np.full((3, 4), 0),
                [[0, 1], [0]]]),
    *refusals(
        mhattn.learn.slot_loss_and_grads,
        dict(model=mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8), tokens=np.full((3, 5), 0),
             targets=np.full((2, 3, 5), 0)),
        tokens=[np.full((3, 5), -1000000), np.full((3, 5), 1000000), np.full((1, 3, 5), 0)],
        targets=[np.full((2, 3, 5), -1000000), np.full((2, 3, 5), 1000000), np.full((1, 2, 3, 5), 0)]),
    *refusals(
        mhattn.learn.slot_accuracy,
        dict(model=mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8), tokens=np.full((3, 5), 0),
             targets=np.full((2, 3, 5), 0)),
        tokens=[np.full((3, 5), -1000000), np.full((3, 5), 1000000), np.full((1, 3, 5), 0)],
        targets=[np.full((2, 3, 5), -1000000), np.full((2, 3, 5), 1000000), np.full((1, 2, 3, 5), 0)]),
    *refusals(
        mhattn.learn.train_heads,
        dict(num_heads=2, steps=1, batch_size=2),
        num_heads=[3]),
    *refusals(
        mhattn.learn.evaluation_batch,
        dict(seed=0, num_sequences=2),
        seq_len=[0]),
    *refusals(
        mhattn.learn.offset_profile,
        dict(weights=np.full((1, 2, 3, 3), 0.3333333333333333), max_offset=1),
        weights=[np.full((1, 1, 2, 3, 3), 0.3333333333333333)],
        max_offset=[3]),
    *refusals(
        mhattn.learn.mean_weights,
        dict(model=mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8), tokens=np.full((3, 5), 0)),
        tokens=[np.full((3, 5), -1000000), np.full((3, 5), 1000000), np.full((1, 3, 5), 0)]),
    *refusals(
        mhattn.learn.experiment,
        dict(head_counts=(1,), seeds=(0,), num_sequences=2, steps=1, batch_size=2),
        head_counts=[(), (0,), (1.5,), 3],
        seeds=[(), (-1,), (True,)]),
    *refusals(
        mhattn.learn.logits_with_weights,
        dict(model=mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8), tokens=np.full((3, 5), 0),
             weights=np.full((3, 2, 5, 5), 0.2)),
        tokens=[np.full((3, 5), -1000000), np.full((3, 5), 1000000), np.full((1, 3, 5), 0)],
        weights=[np.full((1, 3, 2, 5, 5), 0.2)]),
    *refusals(
        mhattn.learn.without_heads,
        dict(model=mhattn.learn.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8), heads=[0]),
        heads=[[2]]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
