"""The tiny attention-only transformer and its shipped checkpoints.

The targets are the issue's, measured on fresh random sequences (a fixed seed the training
never saw). Training amplifies BLAS rounding, but the shipped weights are fixed: the only
rounding left is the forward's, ~1e-13, which cannot move an accuracy measured on 512
sequences, or a score averaged over thousands of weights, across a target.
"""

import os
from importlib import resources

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn import MultiHeadAttention, causal_mask, softmax
from mhattn.learn.letters import decode_tokens, encode_letters
from mhattn.learn.model import InductionModel
from mhattn.learn.shipped import load_trained
from mhattn.learn.task import accuracy, determined_positions, induction_batch, repeated_positions

# the doors of the module's functions, as mhattn.learn shows them
checked_load_trained = mhattn.learn.load_trained
checked_encode_letters = mhattn.learn.encode_letters


@pytest.fixture(scope="module")
def batch():
    """512 fresh sequences, from a seed the training never saw."""
    return induction_batch(np.random.default_rng(2024), 512, at_start=True)[:2]


# --- the checkpoint file ---------------------------------------------------------------------


def test_checkpoint_has_the_documented_keys_shapes_and_layout():
    path = resources.files("mhattn") / "data" / "induction.npz"
    with resources.as_file(path) as file, np.load(file) as data:
        arrays = {name: data[name] for name in data.files}
    vocab, d_model = arrays["embed"].shape
    max_len = arrays["pos"].shape[0]
    num_heads = int(arrays["num_heads"])
    assert arrays["num_heads"].shape == ()
    assert vocab >= 20 and max_len >= 24 and d_model <= 128 and d_model % num_heads == 0
    assert arrays["pos"].shape == (max_len, d_model)
    assert arrays["unembed"].shape == (d_model, vocab)
    for layer in (0, 1):
        assert arrays[f"layer{layer}.W_qkv"].shape == (d_model, 3 * d_model)
        assert arrays[f"layer{layer}.W_o"].shape == (d_model, d_model)
    assert "layer2.W_qkv" not in arrays
    for name in ("step", "loss", "accuracy"):  # the training curve, for the notebook's figure
        assert arrays[f"history.{name}"].ndim == 1 and len(arrays[f"history.{name}"]) == len(arrays["history.step"])
    assert arrays["machine"].dtype.kind == "U" and arrays["machine"].shape == ()  # where it was trained, in words
    for layer in (0, 1):  # each layer's RoPE setting: none, so the learned position table is the only position signal
        assert arrays[f"layer{layer}.rope"].item() == "none" and arrays[f"layer{layer}.rope_base"].shape == ()
    words = {"machine", "layer0.rope", "layer1.rope"}
    assert all(np.isfinite(array).all() for name, array in arrays.items() if name not in words)


def test_checkpoint_layout_is_the_modules_queries_keys_values(model):
    """Columns [0, d) make queries, [d, 2d) keys, [2d, 3d): recomputing head h by hand gives the module's weights."""
    tokens = induction_batch(np.random.default_rng(0), 2)[0]
    layer = model.layers[0]
    x = model.embed[tokens] + model.pos  # (2, max_len, d_model)
    _, weights = layer(x, causal_mask(model.max_len))
    d, d_k = layer.d_model, layer.d_k
    for h in range(layer.num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q = x @ layer.W_qkv[:, :d][:, cols]  # (2, seq, d_k)
        k = x @ layer.W_qkv[:, d : 2 * d][:, cols]
        scores = np.where(causal_mask(model.max_len), q @ k.transpose(0, 2, 1) / np.sqrt(d_k), -np.inf)
        np.testing.assert_allclose(weights[:, h], softmax(scores), rtol=0, atol=1e-12)


def test_load_trained_gives_independent_copies():
    first, second = load_trained(), load_trained()
    first.layers[0].W_o[...] = 0.0
    first.embed[...] = 0.0
    assert np.abs(second.layers[0].W_o).max() > 0 and np.abs(second.embed).max() > 0


def test_load_trained_rejects_other_layer_counts():
    with pytest.raises(ValueError, match="num_layers must be 1 or 2"):
        checked_load_trained(3)


def test_save_and_load_round_trip(tmp_path):
    model = InductionModel(2, seed=3)
    model.history = {"step": np.array([1, 2]), "loss": np.array([3.0, 2.0]), "accuracy": np.array([0.1, 0.2])}
    model.save(tmp_path / "m.npz", seed=3)
    again = InductionModel.load(tmp_path / "m.npz")
    for name, array in model.parameters().items():
        assert np.array_equal(again.parameters()[name], array)
    assert np.array_equal(again.history["loss"], model.history["loss"])


@pytest.mark.parametrize(("probe_step", "expected"), [(None, [1, 5, 10]), ([1, 10], [1, 10])])
def test_a_loaded_history_names_the_steps_its_probes_ran_at(tmp_path, probe_step, expected):
    """Probes recorded without steps of their own ran at every ``step``; their own steps are kept."""
    model = InductionModel(1, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)
    probes = len(expected)
    model.history = {"step": np.array([1, 5, 10]), "loss": np.ones(3), "token_loss": np.ones((probes, 3))}
    if probe_step is not None:
        model.history["probe_step"] = np.array(probe_step)
    history = InductionModel.load(model.save(tmp_path / "m.npz")).history
    assert history["probe_step"].tolist() == expected and len(history["token_loss"]) == probes


# --- the shipped checkpoint at work (the heads' scores: tests/learn/test_circuits.py) ---------------------


def test_accuracy_on_the_repeated_half_is_at_least_0_9(model, batch):
    tokens, n = batch
    assert accuracy(model.forward(tokens)[0], tokens, n) >= 0.9


def test_zeroing_layer0_costs_at_least_0_4(model, batch):
    tokens, n = batch
    full = accuracy(model.forward(tokens)[0], tokens, n)
    assert full - accuracy(model.forward(tokens, ablate=[(0, None)])[0], tokens, n) >= 0.4


def test_one_layer_trained_the_same_way_stays_far_below(batch):
    tokens, n = batch
    assert accuracy(load_trained(1).forward(tokens)[0], tokens, n) < 0.7


def test_without_positions_the_induction_circuit_breaks(model):
    """The previous-token head finds t - 1 by position: without positions it cannot, and induction fails."""
    tokens, n, *_ = induction_batch(np.random.default_rng(5), 256, at_start=True)
    logits, _ = model.forward(tokens, use_positions=False)
    assert accuracy(logits, tokens, n) < 0.5


def test_typed_letters_light_up_the_induction_head(model):
    """The explorer's example: on the repeat of "a b c d x", a layer-1 head looks right after the earlier copy.

    The repeat starts at position 0 here; the model copies at other offsets too
    (tests/learn/test_induction_model.py measures every offset).
    """
    tokens = encode_letters("a b c d x a b c")
    logits, weights = model.forward(tokens)
    assert decode_tokens(logits.argmax(-1)[5:]) == "b c d"  # the second a, b, c predict what followed them
    on_target = weights[1][:, [5, 6, 7], [1, 2, 3]]  # (num_heads, 3): the second a, b, c -> keys 1, 2, 3
    assert on_target.mean(axis=1).max() > 0.5


def test_induction_batch_repeats_the_first_n_tokens():
    tokens, n, *_ = induction_batch(np.random.default_rng(7), 200, vocab=32, max_len=32, at_start=True)
    assert tokens.shape == (200, 32) and tokens.min() >= 0 and tokens.max() < 32
    assert n.min() == 4 and n.max() == 16  # both ends of [max_len // 8, max_len // 2] occur in 200 draws
    for b in range(200):
        assert np.array_equal(tokens[b, n[b] : 2 * n[b]], tokens[b, : n[b]])
    scored = repeated_positions(n)
    assert np.array_equal(scored.sum(axis=1), n - 1)


def test_accuracy_counts_only_the_determined_positions():
    """Positions of the second copy whose next token the sequence determines (tests/learn/test_induction_model.py)."""
    tokens, n, *_ = induction_batch(np.random.default_rng(8), 4, at_start=True)
    logits = np.zeros(tokens.shape + (32,))
    logits[np.arange(4)[:, None], np.arange(31), tokens[:, 1:]] = 1.0  # perfect everywhere
    assert accuracy(logits, tokens, n) == 1.0
    scored = determined_positions(tokens, n)
    logits[scored] = 0.0
    logits[..., 31] = 0.5  # wrong on the scored positions (unless the token is 31)
    wrong = tokens[:, 1:][scored[:, :-1]] != 31
    assert accuracy(logits, tokens, n) == pytest.approx(1 - wrong.mean())


# --- the forward pass --------------------------------------------------------------------------------


def naive_forward(model, tokens, ablated=()):
    """The model for one sequence, with every head as its own loop: an independent oracle."""
    seq = len(tokens)
    h = model.embed[tokens] + model.pos[:seq]  # (seq, d_model)
    for i, layer in enumerate(model.layers):
        d, d_k = layer.d_model, layer.d_k
        out = np.zeros_like(h)
        for head in range(layer.num_heads):
            if (i, head) in ablated or (i, None) in ablated:
                continue
            cols = np.arange(head * d_k, (head + 1) * d_k)
            q, k, v = (h @ layer.W_qkv[:, part * d + cols] for part in range(3))
            for t in range(seq):
                scores = np.array([q[t] @ k[j] / np.sqrt(d_k) for j in range(t + 1)])
                w = np.exp(scores - scores.max())
                w /= w.sum()
                out[t] += (w @ v[: t + 1]) @ layer.W_o[cols]
        h = h + out
    return h @ model.unembed


@pytest.mark.parametrize("ablate", [(), ((0, None),), ((1, 2),), ((0, 1), (1, 0), (1, 3))])
def test_forward_and_ablation_equal_a_loop_over_heads(model, ablate):
    tokens = induction_batch(np.random.default_rng(9), 1)[0][0][:20]
    logits, weights = model.forward(tokens, ablate=ablate)
    assert logits.shape == (20, model.vocab) and [w.shape for w in weights] == [(4, 20, 20)] * 2
    np.testing.assert_allclose(logits, naive_forward(model, tokens, set(ablate)), rtol=0, atol=1e-10)


def test_batched_forward_equals_one_sequence_at_a_time(model):
    tokens = induction_batch(np.random.default_rng(10), 3)[0]
    logits, weights = model.forward(tokens)
    assert logits.shape == (3, 32, 32) and weights[0].shape == (3, 4, 32, 32)
    for b in range(3):
        single, single_weights = model.forward(tokens[b])
        np.testing.assert_allclose(logits[b], single, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights[1][b], single_weights[1], rtol=0, atol=1e-15)
    assert np.array_equal(model.predict(tokens), logits.argmax(-1))


def test_ablation_leaves_the_model_untouched(model):
    before = {name: array.copy() for name, array in model.parameters().items()}
    model.forward(np.arange(10), ablate=[(0, None), (1, 2)])
    assert all(np.array_equal(array, before[name]) for name, array in model.parameters().items())


def test_layers_are_the_chapters_module(model):
    assert all(type(layer) is MultiHeadAttention for layer in model.layers)
    assert model.vocab == 32 and model.max_len == 32 and model.d_model == 64 and model.num_heads == 4


def test_without_positions_and_mask_attention_is_permutation_equivariant(model):
    """Shuffle the tokens, and the outputs shuffle the same way: attention alone cannot see order."""
    tokens = encode_letters("a b c d x a b c")
    perm = np.random.default_rng(11).permutation(len(tokens))
    layer = model.layers[0]
    x = model.embed[tokens][None]  # (1, 8, d_model): no positions
    out, _ = layer(x)
    out_shuffled, _ = layer(x[:, perm])
    np.testing.assert_allclose(out_shuffled, out[:, perm], rtol=0, atol=1e-12)
    # with positions added after the shuffle, the shuffled sequence is a different input
    shuffled_with_positions = x[:, perm] + model.pos[:8]
    assert not np.allclose(layer(shuffled_with_positions)[0], layer(x + model.pos[:8])[0][:, perm], atol=1e-3)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (np.array([1.0, 2.0]), TypeError, "integer ids"),
        (np.zeros((2, 2, 2), dtype=int), ValueError, "shape"),
        (np.zeros(33, dtype=int), ValueError, "max_len = 32"),
        (np.array([0, 32]), ValueError, r"ids in \[0, 32\)"),
        (np.array([-1, 3]), ValueError, r"ids in \[0, 32\)"),
    ],
)
def test_forward_rejects_bad_tokens(model, bad, error, message):
    with pytest.raises(error, match=message):
        model.forward(bad)


def test_ablate_rejects_layers_and_heads_that_do_not_exist(model):
    with pytest.raises(ValueError, match="layer must be in"):
        model.forward(np.arange(4), ablate=[(2, None)])
    with pytest.raises(ValueError, match="head must be None or in"):
        model.forward(np.arange(4), ablate=[(0, 4)])


# --- letters -----------------------------------------------------------------------------------------


def test_encode_letters_with_and_without_spaces():
    assert encode_letters("a b c d x a b c").tolist() == [0, 1, 2, 3, 23, 0, 1, 2]
    assert encode_letters("abcdXabc").tolist() == [0, 1, 2, 3, 23, 0, 1, 2]
    assert encode_letters("").tolist() == []
    assert decode_tokens([0, 1, 25, 27]) == "a b z <27>"
    assert decode_tokens(encode_letters("hello")) == "h e l l o"


def test_encode_letters_names_what_it_cannot_encode():
    with pytest.raises(ValueError, match=r"\['1', '!'\]|\['!', '1'\]"):
        checked_encode_letters("a 1 b!")
    with pytest.raises(TypeError, match="string of letters"):
        checked_encode_letters([0, 1])


# === the model as a public door: its inputs, its parameters, its checkpoints (every error names
# what the caller passed and what is wrong with it; a checkpoint is written atomically, read without pickle)


def small_model(num_heads=4, seed=1):
    return InductionModel(2, vocab=7, max_len=6, d_model=8, num_heads=num_heads, seed=seed)


def arrays_of(model):
    return dict(model.parameters()) | {"num_heads": np.array(model.num_heads)}


# --- the forward's door ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["embed", "pos", "unembed", "layer1.W_o"])
def test_a_nan_parameter_is_named_instead_of_giving_nan_logits(name):
    model = small_model()
    model.parameters()[name][0, 0] = np.nan
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        model.forward([1, 2, 3])
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        model.predict([1, 2, 3])  # never a row of zeros


def test_finite_parameters_that_overflow_raise_instead_of_warning():
    model = small_model()
    model.unembed[:] = 1e306
    model.embed[:] = 1e5
    with pytest.raises(FloatingPointError, match="InductionModel.forward overflowed float64"):
        model.forward([1, 2])


def test_a_parameter_of_the_wrong_shape_is_named():
    model = small_model()
    model.layers[0].W_o = np.zeros((8, 7))
    with pytest.raises(ValueError, match=r"layer0.W_o must have shape \(8, 8\)"):
        model.forward([1])


@pytest.mark.parametrize(
    "tokens, error, message",
    [
        ([], ValueError, "seq_len = 0"),
        ([[1, 2], [3]], ValueError, "ragged"),
        (np.zeros((0, 3), dtype=int), ValueError, "at least one sequence"),
        ([True, False], TypeError, "dtype bool"),
        ([1.0, 2.0], TypeError, "dtype float64"),
    ],
)
def test_bad_tokens_are_named(tokens, error, message):
    with pytest.raises(error, match=message):
        small_model().forward(tokens)


@pytest.mark.parametrize(
    "ablate, error, message",
    [
        ([(0, True)], TypeError, "head must be None or an int"),
        ([(True, 0)], TypeError, "layer must be an int"),
        ([(0, 1.0)], TypeError, "head must be None or an int"),
        ([(0,)], ValueError, r"\(layer, head\) pairs"),
        ([(2, 0)], ValueError, r"layer must be in \[0, 1\]"),
        ([(1, 4)], ValueError, r"head must be None or in \[0, 3\]"),
        (5, TypeError, "iterable"),
    ],
)
def test_bad_ablations_are_named(ablate, error, message):
    with pytest.raises(error, match=message):
        small_model().forward([1, 2], ablate=ablate)


def test_use_positions_must_be_a_bool():
    with pytest.raises(TypeError, match="use_positions"):
        small_model().forward([1, 2], use_positions="no")


def test_load_trained_refuses_true_for_one():
    with pytest.raises(TypeError, match="num_layers must be 1 or 2"):
        checked_load_trained(True)
    assert len(checked_load_trained(np.int64(1)).layers) == 1


# --- save ----------------------------------------------------------------------------------------


def test_save_appends_npz_and_returns_the_path_written(tmp_path):
    written = small_model().save(tmp_path / "model")
    assert written == str(tmp_path / "model.npz") and os.path.isfile(written)
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]  # no temporary file left behind


def test_save_refuses_a_folder(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a folder"):
        small_model().save(tmp_path)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["num_heads", "embed", "layer0.W_qkv", "history.loss", "layer7.W_o"])
def test_save_refuses_extras_that_collide_with_the_models_own(tmp_path, name):
    with pytest.raises(ValueError, match=f"extra '{name}' collides"):
        small_model().save(tmp_path / "m.npz", **{name: 8})
    assert not (tmp_path / "m.npz").exists()


def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    first = small_model(seed=1)
    first.save(path)

    def interrupted(file, **arrays):  # np.savez, stopped half way (Ctrl-C, a full disk, a crash)
        if isinstance(file, (str, os.PathLike)):
            file = open(file, "wb")  # noqa: SIM115 - left open, as a crash would
        file.write(b"PK\x03\x04 half a zip")
        file.flush()
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        small_model(seed=2).save(path)
    monkeypatch.undo()
    loaded = InductionModel.load(path)
    for name, array in first.parameters().items():
        np.testing.assert_array_equal(loaded.parameters()[name], array)
    assert os.listdir(tmp_path) == ["model.npz"]


# --- load ----------------------------------------------------------------------------------------


def test_load_keeps_a_non_default_head_count(tmp_path):
    model = small_model(num_heads=2)
    loaded = InductionModel.load(model.save(tmp_path / "two_heads"))
    assert loaded.num_heads == 2 and loaded.layers[0].d_k == 4
    tokens = np.array([3, 1, 4, 1, 5])
    np.testing.assert_allclose(loaded.forward(tokens)[0], naive_forward(model, tokens), atol=1e-12)


def _write(path, arrays):
    np.savez(path, **arrays)
    return path


def _broken(tmp_path):
    valid = arrays_of(small_model())
    good = tmp_path / "good.npz"
    _write(good, valid)
    data = good.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.npz").write_bytes(b"not a checkpoint at all")
    (tmp_path / "empty.npz").write_bytes(b"")
    np.save(tmp_path / "single.npy", np.zeros(3))
    os.replace(tmp_path / "single.npy", tmp_path / "single.npz")
    cases = {
        "truncated.npz": "not a readable .npz",
        "text.npz": "not a readable .npz",
        "empty.npz": "not a readable .npz",
        "single.npz": "not a readable .npz",
        _write(tmp_path / "no_pos.npz", {k: v for k, v in valid.items() if k != "pos"}).name: "missing pos",
        _write(tmp_path / "gap.npz", valid | {"layer3.W_o": valid["layer0.W_o"]}).name: "missing layer2.W_qkv",
        _write(tmp_path / "objects.npz", valid | {"note": np.array([{}], dtype=object)}).name: "Python objects",
        _write(tmp_path / "nan.npz", valid | {"pos": valid["pos"] * np.nan}).name: "pos holds 48 NaN",
        _write(tmp_path / "ints.npz", valid | {"embed": valid["embed"].astype(int)}).name: "embed must hold floats",
        _write(tmp_path / "shape.npz", valid | {"unembed": valid["unembed"][:, :3]}).name: "unembed has shape",
        _write(tmp_path / "heads3.npz", valid | {"num_heads": np.array(3)}).name: "num_heads = 3 must",
        _write(tmp_path / "heads0.npz", valid | {"num_heads": np.array(0)}).name: "num_heads = 0 must",
        _write(tmp_path / "heads_many.npz", valid | {"num_heads": np.array([4, 4])}).name: "num_heads must be one",
        _write(tmp_path / "heads_float.npz", valid | {"num_heads": np.array(4.0)}).name: "num_heads must be one",
    }
    return cases


def test_broken_checkpoints_name_the_file_and_the_fault_without_pickle_hints(tmp_path):
    for name, fault in _broken(tmp_path).items():
        with pytest.raises(ValueError) as error:
            InductionModel.load(tmp_path / name)
        message = str(error.value)
        assert name in message and fault in message, (name, message)
        assert "pickle=" not in message and "allow_pickle" not in message


def test_a_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        InductionModel.load(tmp_path / "nowhere.npz")


def test_the_shipped_checkpoints_pass_the_checks():
    for num_layers in (1, 2):
        model = load_trained(num_layers)
        assert all(p.dtype == np.float64 for p in model.parameters().values())


def test_initial_weights_have_the_documented_spread():
    # Docstring: embeddings N(0, EMBED_SCALE**2), unembedding N(0, 1 / d_model). A sample std of
    # N draws errs by about sigma / sqrt(2 N): <= 0.6 % here, so 5 % is a wide, still sharp bound.
    from mhattn.learn.model import EMBED_SCALE

    model = InductionModel(1, vocab=64, max_len=64, d_model=256, num_heads=4, seed=9)
    assert model.embed.std() == pytest.approx(EMBED_SCALE, rel=0.05)
    assert model.pos.std() == pytest.approx(EMBED_SCALE, rel=0.05)
    assert model.unembed.std() == pytest.approx(1 / np.sqrt(256), rel=0.05)
    assert abs(model.unembed.mean()) < 5 * (1 / np.sqrt(256)) / np.sqrt(model.unembed.size)


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------


def _tiny_model():
    return mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.InductionModel,
        dict(num_layers=1, vocab=6, max_len=8, d_model=8, num_heads=2),
        num_heads=[3]),
    *refusals(
        (lambda **kw: _tiny_model().forward(**kw)),
        dict(tokens=np.array([[0, 1, 2, 3, 4, 5, 0, 1]])),
        tokens=[np.array([[-1000000, -999999, -999998, -999997, -999996, -999995, -1000000, -999999]]),
                np.array([[1000000, 1000001, 1000002, 1000003, 1000004, 1000005, 1000000, 1000001]]),
                np.array([[[0, 1, 2, 3, 4, 5, 0, 1]]]), np.full((1, 9), 0), [[0, 1], [0]]],
        ablate=[[(0, 2)], [(2, 0)]]),
    *refusals(
        (lambda **kw: _tiny_model().predict(**kw)),
        dict(tokens=np.array([[0, 1, 2, 3, 4, 5, 0, 1]])),
        tokens=[np.array([[-1000000, -999999, -999998, -999997, -999996, -999995, -1000000, -999999]]),
                np.array([[1000000, 1000001, 1000002, 1000003, 1000004, 1000005, 1000000, 1000001]]),
                np.array([[[0, 1, 2, 3, 4, 5, 0, 1]]])]),
    *refusals(
        (lambda **kw: _tiny_model().ablated_layers(**kw)),
        dict(ablate=[(0, 0)]),
        ablate=[[(0, 2)], [(2, 0)]]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
