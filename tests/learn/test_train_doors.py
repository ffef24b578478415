"""The trainer's doors: every argument checked before a step is taken, and its documented parts.

The random streams are compared with the ones the docstring names (the loss, with its
definition, is checked in test_train.py).
"""

import importlib
import re

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn.learn import cli
from mhattn.learn.cli import main
from mhattn.learn.model import InductionModel
from mhattn.learn.optim import Adam
from mhattn.learn.task import induction_batch
from mhattn.learn.train import loss_and_grads

trainer = importlib.import_module("mhattn.learn.train")  # the module (mhattn.learn.train is its door)
train = mhattn.learn.train
checked_loss_and_grads = mhattn.learn.loss_and_grads
learning_rate_at = mhattn.learn.learning_rate_at


def _no_training(*args, **kwargs):
    raise AssertionError("training started before every argument was checked")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"lr": float("nan")}, ValueError, "lr must be a finite float > 0; got nan"),
        ({"lr": float("inf")}, ValueError, "lr must be a finite float > 0"),
        ({"lr": -1.0}, ValueError, "lr must be a finite float > 0; got -1"),
        ({"lr": 0}, ValueError, "lr must be a finite float > 0"),
        ({"lr": True}, TypeError, "lr must be"),
        ({"lr": "0.1"}, TypeError, "lr must be"),
        ({"eval_every": 0}, ValueError, "eval_every must be a positive int"),
        ({"num_layers": 0}, ValueError, "num_layers must be a positive int"),
        ({"steps": 0}, ValueError, "steps must be a positive int"),
        ({"progress": "yes"}, TypeError, "progress must be True or False"),
        ({"dtype": "int32"}, ValueError, "dtype must be float32 or float64"),
    ],
)
def test_train_checks_every_argument_before_the_first_step(monkeypatch, kwargs, error, message):
    monkeypatch.setattr(trainer, "loss_and_grads", _no_training)
    with pytest.raises(error, match=message):
        train(**{"steps": 1} | kwargs)


def test_adam_refuses_a_learning_rate_that_is_not_a_finite_positive_float():
    params = {"w": np.zeros(2)}
    for lr in (float("nan"), -1.0, 0.0):
        with pytest.raises(ValueError, match="lr must be a finite float > 0"):
            Adam(params, lr=lr)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--lr", "nan"], "--lr"),
        (["--lr", "-1"], "--lr"),
        (["--lr", "inf"], "--lr"),
        (["--steps", "0"], "--steps"),
        (["--steps", "1.5"], "--steps"),
        (["--layers", "0"], "--layers"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--batch-size", "0"], "--batch-size"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_bad_command_line_values_are_usage_errors_before_training(monkeypatch, capsys, tmp_path, argv, option):
    monkeypatch.setattr(cli, "train", _no_training)
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(tmp_path / "m.npz")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and f"argument {option}:" in err and "Traceback" not in err


@pytest.mark.parametrize("out", [".", "..", "folder", "folder/"])
def test_out_must_name_a_file_not_a_folder(monkeypatch, capsys, tmp_path, out):
    monkeypatch.setattr(cli, "train", _no_training)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(SystemExit):
        main(["--out", out])
    assert "is a folder" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.npz")) and not list(tmp_path.glob(".*npz"))


def test_an_unwritable_out_is_refused_before_training(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "train", _no_training)
    (tmp_path / "a_file").write_text("")
    for out in (tmp_path / "missing" / "m.npz", tmp_path / "a_file" / "m.npz"):
        with pytest.raises(SystemExit):
            main(["--out", str(out)])
        assert f"cannot write {out}" in capsys.readouterr().err


def test_the_command_line_prints_the_path_it_wrote(monkeypatch, capsys, tmp_path):
    small = InductionModel(1, vocab=6, max_len=8, d_model=8, num_heads=2)
    monkeypatch.setattr(cli, "train", lambda *args, **kwargs: small)
    monkeypatch.chdir(tmp_path)
    assert main(["--out", "model", "--quiet"]) == 0
    assert (tmp_path / "model.npz").is_file() and not (tmp_path / "model").exists()
    assert "saved model.npz\n" in capsys.readouterr().out


def test_help_is_plain_text_with_every_default(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert ":class:" not in text and ":func:" not in text and "``" not in text
    options = ["--layers", "--seed", "--steps", "--lr", "--batch-size", "--dtype", "--threads", "--quiet"]
    for option in options:
        after = text.split(f"  {option}", 1)[1]
        help_of_option = after.split("\n  --", 1)[0]
        assert "default" in help_of_option, option
    assert "(default: float32)" in " ".join(text.split())


def test_weights_and_batches_come_from_the_documented_streams(monkeypatch):
    seed, batch_size = 7, 3
    seen = []

    def recording(model, tokens, n, dtype):
        seen.append(({name: p.copy() for name, p in model.parameters().items()}, tokens.copy(), n.copy()))
        return loss_and_grads(model, tokens, n, dtype)

    monkeypatch.setattr(trainer, "loss_and_grads", recording)
    monkeypatch.setattr(trainer, "FORMING_STEPS", 2)  # steps 1-2 on full batches, step 3 on a half batch
    trainer.train(1, seed=seed, steps=3, batch_size=batch_size)
    weights_stream, batch_stream = np.random.SeedSequence(seed).spawn(2)
    expected = InductionModel(1, seed=int(weights_stream.generate_state(1)[0]))
    for name, array in expected.parameters().items():
        np.testing.assert_array_equal(seen[0][0][name], array, err_msg=name)
    data = np.random.default_rng(batch_stream)
    for (_, tokens, n), size in zip(seen, [batch_size, batch_size, batch_size // 2], strict=True):
        expected_tokens, expected_n, *_ = induction_batch(data, size, edge_share=trainer.EDGE_SHARE)
        np.testing.assert_array_equal(tokens, expected_tokens)
        np.testing.assert_array_equal(n, expected_n)


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"tokens": np.arange(12) % 16}, ValueError, r"batch of shape \(batch, seq_len\)"),
        ({"tokens": [[1, 2], [3]]}, ValueError, "ragged"),
        ({"n": np.array([3, 3])}, ValueError, r"n must be ints of shape \(6,\)"),
        ({"n": np.full(6, 3.0)}, ValueError, "n must be ints"),
        ({"n": np.full(6, 7)}, ValueError, r"n must be in \[1, seq_len // 2 = 6\]"),
        ({"n": np.zeros(6, dtype=int)}, ValueError, "n must be in"),
        ({"dtype": np.int64}, ValueError, "dtype must be float32 or float64"),
    ],
)
def test_the_loss_checks_its_batch(change, error, message):
    model = InductionModel(1, vocab=16, max_len=12, d_model=8, num_heads=2)
    tokens, n, *_ = induction_batch(np.random.default_rng(5), 6, vocab=16, max_len=12)
    arguments = {"tokens": tokens, "n": n, "dtype": np.float64} | change
    with pytest.raises(error, match=message):
        checked_loss_and_grads(model, arguments["tokens"], arguments["n"], arguments["dtype"])


def test_the_loss_names_a_nan_parameter_instead_of_returning_nan():
    model = InductionModel(1, vocab=16, max_len=12, d_model=8, num_heads=2)
    model.unembed[3, 4] = np.nan
    tokens, n, *_ = induction_batch(np.random.default_rng(5), 6, vocab=16, max_len=12)
    with pytest.raises(ValueError, match="unembed must be finite"):
        checked_loss_and_grads(model, tokens, n, np.float64)


# --- the step-size schedule ---------------------------------------------------------------------


def test_the_schedule_rises_linearly_then_falls_along_a_cosine_to_its_final_fraction():
    lr, warmup, steps, final = 0.2, 10, 110, 0.1
    at = [learning_rate_at(t, steps, lr, warmup, final) for t in (1, 5, 10, 60, 110)]
    middle = lr * (final + (1 - final) / 2)  # halfway down the cosine: cos(pi / 2) = 0
    np.testing.assert_allclose(at, [lr / 10, lr / 2, lr, middle, final * lr], rtol=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"step": 0}, ValueError, "step must be an int in [1, steps = 10] (counted from 1); got 0"),
        ({"step": 11}, ValueError, "step must be an int in [1, steps = 10] (counted from 1); got 11"),
        ({"step": True}, TypeError, "step must be an int in [1, steps = 10]; got True"),
        ({"steps": 0}, ValueError, "steps must be a positive int; got 0"),
        ({"lr": -0.1}, ValueError, "lr must be a finite float > 0; got -0.1"),
        ({"warmup": -1}, ValueError, "warmup must be an int >= 0; got -1"),
        ({"final_fraction": float("nan")}, ValueError, "final_fraction must be a float in [0, 1]; got nan"),
        ({"final_fraction": 2}, ValueError, "final_fraction must be a float in [0, 1]; got 2.0"),
    ],
)
def test_the_schedule_refuses_a_step_outside_the_run(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        learning_rate_at(**({"step": 1, "steps": 10, "lr": 0.1} | kwargs))


# --- every legal value trains, and the end of a run says what was written -------------------------


def test_layers_deeper_than_the_limit_are_a_usage_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "train", _no_training)
    with pytest.raises(SystemExit) as exit_:
        main(["--layers", str(cli.MAX_LAYERS + 1), "--out", str(tmp_path / "m.npz")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and f"layers must be an int in [1, {cli.MAX_LAYERS}]" in err


def test_the_deepest_legal_model_takes_its_first_steps_in_float32():
    """The limit keeps a first step in float32 finite (32 layers overflowed at step 1)."""
    model = trainer.train(cli.MAX_LAYERS, seed=0, steps=2, batch_size=16, eval_every=2, dtype=np.float32)
    assert all(np.isfinite(p).all() for p in model.parameters().values())
    assert np.isfinite(model.history["loss"]).all()


def _small_model(*args, **kwargs):
    return InductionModel(1, vocab=6, max_len=8, d_model=8, num_heads=2)


def test_ctrl_c_after_the_save_says_the_checkpoint_was_written(monkeypatch, capsys, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "train", _small_model)
    monkeypatch.setattr(cli, "measure", interrupted)
    out = tmp_path / "m.npz"
    out.write_bytes(b"an older checkpoint")
    assert main(["--out", str(out), "--quiet"]) == 130
    assert f"interrupted after saving: the checkpoint at {out} was written" in capsys.readouterr().err
    assert InductionModel.load(out).d_model == 8


def test_ctrl_c_during_training_says_nothing_was_written(monkeypatch, capsys, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "train", interrupted)
    out = tmp_path / "m.npz"
    assert main(["--out", str(out), "--quiet"]) == 130
    assert f"nothing was written, {out} is as it was" in capsys.readouterr().err
    assert not out.exists()


def test_an_out_folder_removed_during_training_fails_and_writes_nowhere_else(monkeypatch, capsys, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()

    def training_while_the_folder_goes(*args, **kwargs):
        folder.rmdir()
        return _small_model()

    monkeypatch.setattr(cli, "train", training_while_the_folder_goes)
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))  # where a rescue copy would land
    before = set(tmp_path.rglob("*"))
    assert main(["--out", str(folder / "m.npz"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"cannot write checkpoint {folder / 'm.npz'}" in err and "the trained model was not saved" in err
    assert set(tmp_path.rglob("*")) == before - {folder}


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.cross_entropy,
        dict(logits=np.random.default_rng(0).standard_normal((3, 4)), targets=np.array([0, 1, 3])),
        logits=[np.random.default_rng(0).standard_normal((1, 3, 4))],
        targets=[np.array([-1000000, -999999, -999997]), np.array([1000000, 1000001, 1000003]), np.array([[0, 1, 3]])]),
    *refusals(
        mhattn.learn.loss_and_grads,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0),
             tokens=np.full((2, 8), 0), n=np.array([2, 3])),
        tokens=[np.full((2, 8), -1000000), np.full((2, 8), 1000000), np.full((1, 2, 8), 0)],
        n=[np.array([0, 2]), np.random.default_rng(0).standard_normal((2,)), np.array([5, 2])],
        dtype=['float16']),
    *refusals(
        mhattn.learn.train,
        dict(num_layers=1, steps=1, batch_size=2),
        dtype=['float16']),
    *refusals(
        mhattn.learn.learning_rate_at,
        dict(step=1, steps=10, lr=0.1),
        step=[11]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
