"""The trainer: the whole model's gradient, Adam, determinism, and the command line.

Each test stays within a few seconds; what the default recipe learns on fresh seeds (full
retrains, marked ``retrains``) is checked with the model's targets, in test_induction_model.py.
"""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from mhattn.checks import door
from mhattn.checks.training import train_args
from mhattn.core.grad_full import module_vjp
from mhattn.core.masks import causal_mask
from mhattn.learn.cli import main
from mhattn.learn.losses import cross_entropy
from mhattn.learn.model import InductionModel
from mhattn.learn.optim import Adam
from mhattn.learn.task import induction_batch
from mhattn.learn.train import train
from mhattn.learn.training_step import loss_and_grads


def tiny_model(seed=0, num_layers=2):
    return InductionModel(num_layers, vocab=6, max_len=8, d_model=8, num_heads=2, seed=seed)


def model_loss(model, tokens, n):
    return loss_and_grads(model, tokens, n, np.float64)[0]


def test_cross_entropy_and_its_gradient_match_definitions_and_central_differences():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((7, 5)) * 3
    targets = rng.integers(0, 5, size=7)
    loss, d_logits = cross_entropy(logits, targets)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    assert loss == pytest.approx(-np.mean([log_probs[i, targets[i]] for i in range(7)]), rel=1e-14)
    np.testing.assert_allclose(d_logits.sum(axis=-1), 0.0, atol=1e-15)  # probabilities minus one-hot
    numeric = np.zeros_like(logits)
    for index in np.ndindex(logits.shape):
        old = logits[index]
        logits[index] = old + 1e-6
        up = cross_entropy(logits, targets)[0]
        logits[index] = old - 1e-6
        down = cross_entropy(logits, targets)[0]
        logits[index] = old
        numeric[index] = (up - down) / 2e-6
    assert np.abs(numeric - d_logits).max() < 1e-7 * np.abs(d_logits).max()


@pytest.mark.parametrize(
    "sizes", [{}, {"vocab": 16, "max_len": 12, "d_model": 16, "num_heads": 2}], ids=["the-chapters", "smaller"]
)
def test_the_loss_is_the_mean_cross_entropy_of_every_next_token(sizes):
    """A language model's loss: each position t < seq_len - 1 predicts token t + 1, predictable or not."""
    model = InductionModel(2, seed=2, **sizes)
    tokens, n, *_ = induction_batch(np.random.default_rng(1), 8, vocab=model.vocab, max_len=model.max_len)
    loss, _, logits = loss_and_grads(model, tokens, n, np.float64)
    forward, _ = model.forward(tokens)  # float64 forward: an independent path to the logits
    np.testing.assert_allclose(logits, forward, rtol=1e-12, atol=1e-12)
    per_token = []
    for b in range(len(tokens)):
        for t in range(tokens.shape[1] - 1):
            row = [float(z) for z in forward[b, t]]
            top = max(row)
            log_sum = top + math.log(math.fsum(math.exp(z - top) for z in row))
            per_token.append(log_sum - row[tokens[b, t + 1]])
    assert loss == pytest.approx(math.fsum(per_token) / len(per_token), rel=1e-12)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_the_whole_models_gradient_matches_central_differences(num_layers):
    """Every parameter of a tiny model, float64: embeddings, positions, unembedding, every layer."""
    model = tiny_model(seed=1, num_layers=num_layers)
    tokens, n, *_ = induction_batch(np.random.default_rng(2), 3, vocab=6, max_len=8)
    _, grads, _ = loss_and_grads(model, tokens, n, np.float64)
    for name, array in model.parameters().items():
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            old = array[index]
            array[index] = old + 1e-6
            up = model_loss(model, tokens, n)
            array[index] = old - 1e-6
            down = model_loss(model, tokens, n)
            array[index] = old
            numeric[index] = (up - down) / 2e-6
        assert grads[name].shape == array.shape
        assert np.abs(numeric - grads[name]).max() < 1e-7 * np.abs(grads[name]).max(), name


def test_float32_gradients_agree_with_float64():
    """float32 rounding through ~10 products of inner size <= 3 * d_model: ~1e-6 relative; 1e-4 leaves room."""
    model = InductionModel(2, seed=3)
    tokens, n, *_ = induction_batch(np.random.default_rng(3), 8)
    loss64, grads64, _ = loss_and_grads(model, tokens, n, np.float64)
    loss32, grads32, _ = loss_and_grads(model, tokens, n, np.float32)
    assert loss32 == pytest.approx(loss64, rel=1e-5)
    for name, grad in grads64.items():
        assert np.abs(grads32[name] - grad).max() < 1e-4 * np.abs(grad).max(), name


def test_adams_first_step_moves_every_weight_by_the_learning_rate_against_its_gradient():
    """At t = 1 the bias-corrected moments are g and g**2, so the step is lr * g / (|g| + eps)."""
    params = {"w": np.array([1.0, -2.0, 3.0, 0.5])}
    grads = {"w": np.array([0.3, -4.0, 1e-3, 0.0])}
    Adam(params, lr=0.01).step(grads)
    expected = np.array([1.0, -2.0, 3.0, 0.5]) - 0.01 * grads["w"] / (np.abs(grads["w"]) + 1e-8)
    np.testing.assert_allclose(params["w"], expected, rtol=1e-15, atol=0)


def test_adam_matches_torch_over_several_steps():
    if os.environ.get("CI") == "true":
        import torch  # CI installs torch: fail loudly if it is missing
    else:
        torch = pytest.importorskip("torch", reason="torch is not installed: Adam twin test skipped")
    rng = np.random.default_rng(4)
    start = rng.standard_normal(5)
    params = {"w": start.copy()}
    optimizer = Adam(params, lr=0.05)
    tw = torch.tensor(start, requires_grad=True)
    twin = torch.optim.Adam([tw], lr=0.05)
    for _ in range(5):
        g = rng.standard_normal(5)
        optimizer.step({"w": g})
        tw.grad = torch.tensor(g)
        twin.step()
    np.testing.assert_allclose(params["w"], tw.detach().numpy(), rtol=0, atol=1e-14)


def test_a_few_steps_lower_the_loss():
    """30 steps take the batch loss from ~5.2 (the random weights) to ~3.7 (seeds 5-9 measured: drops 1.2-1.7).

    Each recorded loss is one batch's (~700 scored positions), whose noise is ~0.05: a drop of
    0.15 is three standard deviations inside what training delivers.
    """
    model = train(2, seed=5, steps=30, eval_every=10)
    loss = model.history["loss"]
    assert model.history["step"].tolist() == [1, 10, 20, 30]
    assert loss[-1] < loss[0] - 0.15


def test_training_is_deterministic_per_seed():
    first, second = train(2, seed=6, steps=5), train(2, seed=6, steps=5)
    other = train(2, seed=7, steps=5)
    for name, array in first.parameters().items():
        assert np.array_equal(second.parameters()[name], array), name
    assert not np.array_equal(other.parameters()["embed"], first.parameters()["embed"])


def test_how_often_the_history_is_recorded_changes_no_weight():
    """The probes are drawn before the first step and only read: a sparse history trains the same model."""
    dense = train(2, seed=8, steps=12, eval_every=1, probe_every=1)
    sparse = train(2, seed=8, steps=12, eval_every=12, probe_every=12)
    assert len(dense.history["step"]) == 12 and sparse.history["step"].tolist() == [1, 12]
    assert dense.history["probe_step"].tolist() == list(range(1, 13))
    assert sparse.history["probe_step"].tolist() == [1, 12]
    for name, array in dense.parameters().items():
        assert np.array_equal(sparse.parameters()[name], array), name
    for name in ("loss", "induction_loss"):  # the entries both record are the same numbers
        assert dense.history[name][[0, -1]].tolist() == sparse.history[name].tolist(), name


def test_the_probes_run_on_their_own_schedule_beside_the_batch_curve():
    model = train(1, seed=4, steps=10, eval_every=2, probe_every=5, batch_size=4)
    history = model.history
    assert history["step"].tolist() == [1, 2, 4, 6, 8, 10] and len(history["loss"]) == 6
    assert history["probe_step"].tolist() == [1, 5, 10]
    assert history["token_loss"].shape == (3, 3) and history["induction_loss"].shape == (3,)


def test_the_training_step_is_the_chapters_step_bit_for_bit():
    """The step in small functions computes what the one-piece step computed: the same bits for the same inputs.

    The oracle is the one-piece step written out here (the forward of every layer through
    module_vjp, the cross-entropy, the chain rule back), in float32 as training runs.
    """
    model = InductionModel(2, seed=9)
    tokens, n, *_ = induction_batch(np.random.default_rng(2), 16)
    loss, grads, logits = loss_and_grads(model, tokens, n)
    want_loss, want_grads, want_logits = _one_piece_step(model, tokens)
    assert loss == want_loss and np.array_equal(logits, want_logits)
    assert sorted(grads) == sorted(want_grads)
    for name, grad in want_grads.items():
        assert grads[name].dtype == grad.dtype and np.array_equal(grads[name], grad), name


def _one_piece_step(model, tokens, dtype=np.float32):
    batch, seq_len = tokens.shape
    embed, pos, unembed = (p.astype(dtype) for p in (model.embed, model.pos, model.unembed))
    mask = causal_mask(seq_len)
    h = embed[tokens] + pos[:seq_len]
    backwards = []
    for layer in model.layers:
        out, _, backward = module_vjp(layer, h, mask)
        backwards.append(backward)
        h = h + out
    logits = h @ unembed
    scored = np.broadcast_to(np.arange(seq_len) < seq_len - 1, (batch, seq_len))
    loss, d_scored = cross_entropy(logits[scored], np.roll(tokens, -1, axis=1)[scored])
    d_logits = np.zeros_like(logits)
    d_logits[scored] = d_scored
    grads = {"unembed": h.reshape(-1, model.d_model).T @ d_logits.reshape(-1, model.vocab)}
    d_h = d_logits @ unembed.T
    for i in reversed(range(len(model.layers))):
        layer_grads = backwards[i](d_h)
        grads[f"layer{i}.W_qkv"], grads[f"layer{i}.W_o"] = layer_grads["W_qkv"], layer_grads["W_o"]
        d_h = d_h + layer_grads["x"]
    grads["pos"] = np.zeros_like(model.pos)
    grads["pos"][:seq_len] = d_h.sum(axis=0)
    one_hot = tokens.reshape(-1, 1) == np.arange(model.vocab)
    grads["embed"] = one_hot.T.astype(dtype) @ d_h.reshape(-1, model.d_model)
    return loss, grads, logits


def test_training_leaves_numpys_global_random_state_alone():
    np.random.seed(0)
    expected = np.random.random()
    np.random.seed(0)
    train(1, seed=1, steps=2)
    assert np.random.random() == expected


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"steps": 0}, ValueError, "steps must be a positive int"),
        ({"seed": -1}, ValueError, "seed must be an int"),
        ({"dtype": np.float16}, ValueError, "dtype must be float32 or float64"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be a positive int"),
    ],
)
def test_train_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        door(train, train_args)(1, **kwargs)


def test_progress_bar_reaches_the_last_step(capsys):
    train(1, seed=0, steps=3, progress=True)
    assert "3/3" in capsys.readouterr().err


def test_main_writes_a_checkpoint_with_the_history(tmp_path, capsys):
    out = tmp_path / "one.npz"
    assert main(["--layers", "1", "--seed", "3", "--steps", "4", "--out", str(out), "--quiet"]) == 0
    with np.load(out) as data:
        assert {"embed", "pos", "unembed", "layer0.W_qkv", "layer0.W_o", "num_heads"} <= set(data.files)
        assert data["history.step"].tolist() == [1] and int(data["seed"]) == 3 and int(data["steps"]) == 4
    printed = capsys.readouterr().out
    assert "trained 4 steps" in printed and "FAIL  accuracy >= 0.9" in printed


def test_the_command_line_trains_and_saves(tmp_path):
    """End to end in a fresh interpreter, as the README tells a reader to run it."""
    out = tmp_path / "tiny.npz"
    completed = subprocess.run(
        [sys.executable, "-m", "mhattn.train", "--layers", "2", "--seed", "1", "--steps", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "3/3" in completed.stderr  # the progress bar
    assert f"saved {out}" in completed.stdout
    model = InductionModel.load(out)
    assert len(model.layers) == 2 and model.embed.shape == (32, 64)
