"""InductionModel as a public door: its inputs, its parameters, and its checkpoints.

Every error must name what the caller passed (tokens, a head, a parameter, the file) and
what is wrong with it; a checkpoint is written atomically and read without pickle.
"""

import os

import numpy as np
import pytest

from mhattn import MultiHeadAttention, causal_mask
from mhattn.learn.model import InductionModel, load_trained


def small_model(num_heads=4, seed=1):
    return InductionModel(2, vocab=7, max_len=6, d_model=8, num_heads=num_heads, seed=seed)


def arrays_of(model):
    return dict(model.parameters()) | {"num_heads": np.array(model.num_heads)}


def loop_forward(model, tokens):
    """The model written out with separate per-layer modules: an oracle sharing no model code."""
    h = model.embed[tokens] + model.pos[: len(tokens)]
    for i in range(len(model.layers)):
        mha = MultiHeadAttention(model.d_model, model.num_heads)
        mha.W_qkv, mha.W_o = model.layers[i].W_qkv, model.layers[i].W_o
        h = h + mha(h[None], causal_mask(len(tokens)))[0][0]
    return h @ model.unembed


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
    with pytest.raises(FloatingPointError, match="logits overflowed"):
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
    with pytest.raises(ValueError, match="num_layers must be 1 or 2"):
        load_trained(True)
    assert len(load_trained(np.int64(1)).layers) == 1


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
    np.testing.assert_allclose(loaded.forward(tokens)[0], loop_forward(model, tokens), atol=1e-12)


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
