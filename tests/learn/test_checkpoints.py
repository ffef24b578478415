"""Checkpoints hold everything the forward reads, refuse what they cannot hold, and keep the file system as it was.

The reference for every round trip is the saved model's own forward before the save.
"""

import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from mhattn import MultiHeadAttention, RotaryMultiHeadAttention
from mhattn.learn.model import InductionModel

TOKENS = np.arange(8) % 8


def _model():
    return InductionModel(2, vocab=8, max_len=8, d_model=16, num_heads=2, seed=1)


def test_each_layers_rope_settings_survive_a_round_trip(tmp_path):
    model = _model()
    plain = model.layers[1]
    model.layers[1] = RotaryMultiHeadAttention(plain.d_model, plain.num_heads, rope_base=500.0)
    model.layers[1].W_qkv, model.layers[1].W_o = plain.W_qkv, plain.W_o
    expected = model(TOKENS)[0]
    loaded = InductionModel.load(model.save(tmp_path / "m.npz"))
    assert (getattr(loaded.layers[0], "rope", False), loaded.layers[1].rope, loaded.layers[1].rope_base) == (
        False, True, 500.0)
    assert (type(loaded.layers[0]), type(loaded.layers[1])) == (MultiHeadAttention, RotaryMultiHeadAttention)
    np.testing.assert_array_equal(loaded(TOKENS)[0], expected)


def test_a_layer_setting_a_checkpoint_cannot_hold_is_refused_on_save(tmp_path):
    model = _model()
    model.layers[0].scale_scores = 2.0  # an attribute the format does not know
    with pytest.raises(ValueError, match="layer0 has scale_scores"):
        model.save(tmp_path / "m.npz")
    assert not any(tmp_path.iterdir())


def test_load_reads_what_save_wrote_under_the_name_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = _model()
    assert model.save("m") == "m.npz"
    np.testing.assert_array_equal(InductionModel.load("m")(TOKENS)[0], model(TOKENS)[0])


@pytest.mark.parametrize(("history", "error"), [({"loss": [None, 1.0]}, TypeError),
                                                ({"loss": [[1.0], [1.0, 2.0]]}, ValueError),
                                                ({"notes": ["text"]}, TypeError)])
def test_history_is_numbers_only_like_extras(tmp_path, history, error):
    model = _model()
    model.history = history
    with pytest.raises(error, match="history"):
        model.save(tmp_path / "m.npz")


@pytest.mark.parametrize("name", ["allow_pickle", "file", "a/b", "..", "x.y"])
def test_reserved_and_path_like_extra_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError, match="extra"):
        _model().save(tmp_path / "m.npz", **{name: 1})


def test_a_symlink_is_kept_and_the_mode_of_the_old_file_too(tmp_path):
    target = tmp_path / "real.npz"
    _model().save(target)
    os.chmod(target, 0o600)
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    _model().save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert os.stat(target).st_mode & 0o777 == 0o600


def test_a_missing_folder_is_named_not_the_temporary_file(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        _model().save(tmp_path / "gone" / "m.npz")
    assert "m.npz" in str(error.value) and ".tmp" not in str(error.value)


def test_sigterm_during_a_save_leaves_no_temporary_file(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from mhattn.checks import checkpoint_write as checkpoint
        from mhattn.learn.model import InductionModel
        def savez(file, **arrays):
            file.write(b"partial")
            os.kill(os.getpid(), signal.SIGTERM)
            raise AssertionError("SIGTERM did not stop the save")
        checkpoint.np.savez = savez
        InductionModel(1, vocab=4, max_len=4, d_model=4, num_heads=1).save({str(tmp_path / "m.npz")!r})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == -15, result.stderr
    assert list(tmp_path.iterdir()) == []


def _write(path, arrays, extra_member=None):
    np.savez(path, **arrays)
    if extra_member:
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr(extra_member, b"not an array")


def _arrays():
    model = _model()
    return dict(model.parameters()) | {"num_heads": np.array(2)}


@pytest.mark.parametrize(("change", "extra_member", "match"), [
    (lambda a: a.update({"layer01.W_qkv": a["layer1.W_qkv"]}), None, "layer01"),
    (lambda a: None, "notes.txt", "notes.txt"),
    (lambda a: a.update({"embed": np.zeros((8, 0))}), None, "d_model"),
    (lambda a: a.update({"layer999999999.W_o": a["layer1.W_o"]}), None, "layer999999999"),
    (lambda a: a.update({"layer5.W_o": a["layer1.W_o"], "layer5.W_qkv": a["layer1.W_qkv"]}), None, "layer"),
])
def test_load_names_the_file_and_the_entry(tmp_path, change, extra_member, match):
    arrays = _arrays()
    change(arrays)
    path = tmp_path / "bad.npz"
    _write(path, arrays, extra_member)
    with pytest.raises(ValueError, match=match) as error:
        InductionModel.load(path)
    assert "bad.npz" in str(error.value)
