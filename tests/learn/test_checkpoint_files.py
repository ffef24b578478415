"""A checkpoint file is untrusted: sizes are checked before data is read, and a save writes only where it may.

Each test builds the file it needs byte by byte (``np.lib.format`` headers in a ``zipfile``
archive), so the fault is exactly the one named. The reference for every round trip is the
saved model's own forward before the save.
"""

import io
import os
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest

import mhattn.learn
import mhattn.learn.model
from mhattn import MultiHeadAttention, checks
from mhattn.learn import cli, letters, shipped
from mhattn.learn.model import LAYER_CLASSES, InductionModel

TOKENS = np.arange(8) % 8
NOBODY = 65534  # another user's id: the links below are handed to it


def _model(seed=1, **sizes):
    sizes = {"vocab": 8, "max_len": 8, "d_model": 16, "num_heads": 2} | sizes
    return InductionModel(2, seed=seed, **sizes)


def _door(name):
    """``mhattn.learn``'s door of the module function ``name``: the plain function behind its check."""
    return getattr(mhattn.learn, name)


def _npy(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _header(shape, descr="<f8"):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _members(model):
    return {f"{key}.npy": _npy(array) for key, array in model.parameters().items()} | {
        "num_heads.npy": _npy(np.array(model.num_heads))}


def _archive(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _refused(path, match):
    """``InductionModel.load(path)`` raises ValueError matching ``match``, naming the file."""
    with pytest.raises(ValueError, match=match) as error:
        InductionModel.load(path)
    assert os.path.basename(path) in str(error.value)
    return str(error.value)


# --- reading: the sizes first, then only what the model uses ------------------------------------


def test_load_never_reads_the_data_of_a_member_the_model_does_not_use(tmp_path):
    path = _model().save(tmp_path / "m.npz")
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("notes.npy", "w", force_zip64=True) as member:  # 64 MiB of zeros, deflated to 64 kiB
            member.write(_header((64 * 2**20,), "|u1"))
            for _ in range(64):
                member.write(bytes(2**20))
    assert os.path.getsize(path) < 2**20
    InductionModel.load(path)  # the first load imports what it needs: not counted below
    tracemalloc.start()
    try:
        InductionModel.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # the model is 10 kB; reading the notes would take 64 MiB


@pytest.mark.parametrize("member", ["embed", "notes"])
def test_a_header_claiming_8_tib_is_refused_naming_the_file(tmp_path, member):
    members = _members(_model()) | {f"{member}.npy": _header((2**20, 2**20)) + bytes(300_000)}
    path = _archive(tmp_path / "bomb.npz", members)
    assert os.path.getsize(path) < 400_000
    message = _refused(path, f"{member}.npy declares shape")
    assert "8 TiB" in message and "truncated" in message


def test_a_zip_entry_claiming_more_than_deflate_can_expand_is_refused(tmp_path):
    path = _archive(tmp_path / "m.npz", _members(_model()), zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    entry = data.index(b"embed.npy", data.index(b"PK\x01\x02")) - 46  # embed's central directory entry
    compressed = struct.unpack_from("<I", data, entry + 20)[0]
    struct.pack_into("<I", data, entry + 24, 2000 * compressed)  # the uncompressed size it claims
    path.write_bytes(bytes(data))
    _refused(path, "embed.npy' claims .* more than deflate can expand")


def test_a_truncated_member_is_reported_as_truncated(tmp_path):
    members = _members(_model())
    members["embed.npy"] = members["embed.npy"][:-100]
    _refused(_archive(tmp_path / "cut.npz", members), r"embed.npy declares shape \(8, 16\) of float64 .* truncated")


def test_bytes_beyond_a_members_declared_shape_are_refused(tmp_path):
    members = _members(_model())
    members["pos.npy"] += bytes(8)
    _refused(_archive(tmp_path / "long.npz", members), "pos.npy declares shape .* 8 bytes more")


def test_a_member_whose_data_was_changed_fails_its_checksum(tmp_path):
    path = _archive(tmp_path / "m.npz", _members(_model()))
    data = bytearray(path.read_bytes())
    data[data.index(b"embed.npy") + 200] ^= 0xFF  # a byte of embed's data (stored, not compressed)
    path.write_bytes(bytes(data))
    _refused(path, "embed.npy is truncated or corrupted")


def test_a_pickled_member_is_refused_even_where_the_model_would_not_read_it(tmp_path):
    members = _members(_model()) | {"notes.npy": _header((1,), "|O") + b"\x80\x04N."}  # a pickle of None
    _refused(_archive(tmp_path / "m.npz", members), "notes holds Python objects")


# --- where a save may write ---------------------------------------------------------------------

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="handing a link to another user (os.lchown) needs root")


def _victim(tmp_path):
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "m.npz").write_bytes(b"a file the link's owner may not write")
    return folder


@needs_root
@pytest.mark.parametrize("where", ["at the path", "in a folder of the path"])
def test_a_link_another_user_planted_is_not_followed(tmp_path, where):
    victim, planted = _victim(tmp_path), tmp_path / "shared"
    planted.mkdir(mode=0o1777)
    if where == "at the path":
        link = path = planted / "m.npz"
        link.symlink_to(victim / "m.npz")
    else:
        link, path = planted / "out", planted / "out" / "m.npz"
        link.symlink_to(victim, target_is_directory=True)
    os.lchown(link, NOBODY, NOBODY)
    for save in (lambda: _model().save(path), lambda: checks.write_atomic(path, {"x": np.zeros(2)})):
        with pytest.raises(PermissionError, match=f"symbolic link owned by user {NOBODY}") as error:
            save()
        assert str(link) in str(error.value)
    assert (victim / "m.npz").read_bytes() == b"a file the link's owner may not write"
    assert os.listdir(victim) == ["m.npz"] and os.listdir(planted) == [link.name] and link.is_symlink()


@needs_root
def test_load_does_not_follow_another_users_link(tmp_path):
    path = _model().save(tmp_path / "real.npz")
    link = tmp_path / "m.npz"
    link.symlink_to(path)
    InductionModel.load(link)  # your own link is followed
    os.lchown(link, NOBODY, NOBODY)
    with pytest.raises(PermissionError, match=f"cannot read checkpoint {link}: {link} is a symbolic link owned by"):
        InductionModel.load(link)


@needs_root
@pytest.mark.parametrize("at", ["file", "folder"])
def test_the_trainers_out_does_not_follow_another_users_link_and_says_so_before_training(
        tmp_path, capsys, monkeypatch, at):
    victim = _victim(tmp_path)
    link = tmp_path / ("m.npz" if at == "file" else "folder")
    link.symlink_to(victim / "m.npz" if at == "file" else victim)
    os.lchown(link, NOBODY, NOBODY)
    out = link if at == "file" else link / "new.npz"
    monkeypatch.setattr(cli, "train", lambda *args, **kwargs: pytest.fail("trained before refusing --out"))
    before = {path: path.lstat() for path in tmp_path.rglob("*")}
    with pytest.raises(SystemExit) as ended:
        cli.main(["--out", str(out), "--steps", "1", "--batch-size", "2", "--quiet", "--layers", "1"])
    assert ended.value.code == 2  # a usage error, before any step
    assert f"symbolic link owned by user {NOBODY}" in capsys.readouterr().err
    assert (victim / "m.npz").read_bytes() == b"a file the link's owner may not write" and link.is_symlink()
    assert {path: path.lstat() for path in tmp_path.rglob("*")} == before  # nothing written, not even a probe


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555])
@pytest.mark.parametrize("through_a_link", [False, True])
def test_a_read_only_checkpoint_is_not_replaced(tmp_path, mode, through_a_link):
    path = _model().save(tmp_path / "m.npz")
    before = open(path, "rb").read()
    os.chmod(path, mode)
    if through_a_link:
        (tmp_path / "link.npz").symlink_to(path)
    with pytest.raises(PermissionError, match=rf"m.npz is read-only \(mode {mode:o}\)"):
        _model(seed=2).save(tmp_path / ("link.npz" if through_a_link else "m.npz"))
    assert open(path, "rb").read() == before and os.stat(path).st_mode & 0o777 == mode
    assert sorted(os.listdir(tmp_path)) == sorted(["m.npz"] + ["link.npz"] * through_a_link)


@pytest.mark.parametrize(("owner", "mode", "writable"), [
    ("you", 0o600, True), ("you", 0o466, False),  # the owner's bits, not the others'
    ("your group", 0o460, True), ("your group", 0o646, False),
    ("another user", 0o602, True), ("another user", 0o664, False),
])
def test_a_non_root_user_replaces_only_what_the_mode_bits_let_them_write(tmp_path, monkeypatch, owner, mode, writable):
    path = _model().save(tmp_path / "m.npz")
    before = open(path, "rb").read()
    os.chmod(path, mode)
    if os.stat(path).st_uid == 0:
        os.chown(path, 4242, 4242)  # as root: hand the file to a user, so that the user's rules apply
    info = os.stat(path)
    user = info.st_uid if owner == "you" else info.st_uid + 1
    monkeypatch.setattr(os, "geteuid", lambda: user)
    monkeypatch.setattr(os, "getegid", lambda: info.st_gid if owner == "your group" else info.st_gid + 1)
    monkeypatch.setattr(os, "getgroups", lambda: [])
    if writable:
        _model(seed=2).save(path)
        assert open(path, "rb").read() != before
    else:
        with pytest.raises(PermissionError, match="is read-only"):
            _model(seed=2).save(path)
        assert open(path, "rb").read() == before


def test_save_and_load_of_a_name_without_npz_agree_whatever_stands_at_the_name(tmp_path):
    stale = tmp_path / "m"
    stale.write_bytes(b"an older file, not a checkpoint")
    model = _model()
    assert model.save(stale) == str(stale) + ".npz"
    np.testing.assert_array_equal(InductionModel.load(stale)(TOKENS)[0], model(TOKENS)[0])
    assert stale.read_bytes() == b"an older file, not a checkpoint"


def test_load_of_a_name_without_npz_reads_only_that_name_with_npz(tmp_path):
    path = _model().save(tmp_path / "m.npz")
    os.replace(path, tmp_path / "m")
    with pytest.raises(FileNotFoundError, match="m.npz: no such file .* a checkpoint's name ends in .npz"):
        InductionModel.load(tmp_path / "m")


# --- what a checkpoint can hold -----------------------------------------------------------------


class _Doubled(MultiHeadAttention):
    """A layer with its own forward: twice the output."""

    def forward(self, x, mask=None, **kwargs):
        output, weights = super().forward(x, mask, **kwargs)
        return 2 * output, weights

    __call__ = forward


def test_a_layer_of_another_class_is_refused_on_save(tmp_path):
    model = _model()
    doubled = _Doubled(16, 2)
    doubled.W_qkv, doubled.W_o = model.layers[0].W_qkv, model.layers[0].W_o
    model.layers[0] = doubled
    with pytest.raises(ValueError, match="layer0 is a _Doubled, which a checkpoint cannot hold"):
        model.save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_the_layer_classes_a_checkpoint_holds_cannot_be_widened(tmp_path):
    """load rebuilds exactly LAYER_CLASSES: naming another class on a model must not make save accept it."""
    model = _model()
    with pytest.raises(AttributeError):
        model.layer_classes = (*model.layer_classes, _Doubled)
    assert model.layer_classes == LAYER_CLASSES
    model.layers[0] = _Doubled(16, 2)
    with pytest.raises(ValueError, match="layer0 is a _Doubled"):
        model.save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_the_shipped_models_loaders_say_where_they_live():
    for name in ("load_trained", "load_shortcut", "training_record"):
        with pytest.raises(ImportError, match=f"{name} lives in mhattn.learn"):
            exec(f"from mhattn.learn.model import {name}", {})
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        mhattn.learn.model.nothing_here  # noqa: B018


def test_a_grouped_query_layer_in_a_checkpoint_is_named(tmp_path):
    members = _members(_model()) | {"layer1.W_qkv.npy": _npy(np.zeros((16, 16 + 2 * 8)))}  # one key/value head of 8
    _refused(_archive(tmp_path / "gqa.npz", members), r"layer1.W_qkv has shape \(16, 32\).*a grouped-query layer")


def test_rope_with_an_odd_head_size_in_a_checkpoint_names_the_file(tmp_path):
    members = _members(_model(d_model=6)) | {"layer0.rope.npy": _npy(np.array("half"))}  # d_k = 3
    _refused(_archive(tmp_path / "odd.npz", members), "layer0.rope = 'half' needs an even d_k .* got d_k = 3")


def test_a_text_history_entry_is_refused_on_load_as_save_refuses_it(tmp_path):
    members = _members(_model()) | {"history.notes.npy": _npy(np.array(["warmup", "cosine"]))}
    _refused(_archive(tmp_path / "text.npz", members), "history.notes must hold numbers")


def test_what_load_accepts_save_writes_again_and_the_forward_is_unchanged(tmp_path):
    model = _model()
    members = {name: _npy(np.load(io.BytesIO(data)).astype(np.float32)) if "num_heads" not in name else data
               for name, data in _members(model).items()}
    members |= {"layer1.rope.npy": _npy(np.array(True)), "history.token_loss.npy": _npy(np.ones((3, 2))),
                "history.step.npy": _npy(np.arange(3)), "machine.npy": _npy(np.array("a machine")),
                "seed.npy": _npy(np.array(1))}
    loaded = InductionModel.load(_archive(tmp_path / "other.npz", members))
    again = InductionModel.load(loaded.save(tmp_path / "again.npz"))
    np.testing.assert_array_equal(again(TOKENS)[0], loaded(TOKENS)[0])
    assert again.layers[1].rope and again.history["token_loss"].shape == (3, 2)


def test_extras_pass_through_the_door_of_save(tmp_path):
    path = _model().save(tmp_path / "m", seed=3, machine="a machine")
    with np.load(path) as stored:
        assert stored["seed"] == 3 and str(stored["machine"]) == "a machine"


# --- the doors --------------------------------------------------------------------------------------


def test_every_public_method_of_the_model_carries_a_door():
    for name, member in vars(InductionModel).items():
        function = member.__func__ if isinstance(member, classmethod) else member
        if callable(function) and (name == "__init__" or not name.startswith("_")):
            assert hasattr(function, "__door__"), name


MODULE_FUNCTIONS = {"load_trained": shipped, "load_shortcut": shipped, "training_record": shipped,
                    "encode_letters": letters, "decode_tokens": letters}


@pytest.mark.parametrize("name", MODULE_FUNCTIONS)
def test_the_modules_functions_are_plain(name):
    assert not hasattr(getattr(MODULE_FUNCTIONS[name], name), "__door__")
    assert getattr(mhattn.learn, name).__wrapped__ is getattr(MODULE_FUNCTIONS[name], name)


def test_decode_tokens_names_a_token_that_is_not_an_integer():
    decode_tokens = _door("decode_tokens")
    with pytest.raises(TypeError, match=r"tokens must be a 1-D sequence of integer token ids; got dtype float64"):
        decode_tokens([0.5])
    with pytest.raises(ValueError, match=r"got shape \(1, 2\)"):
        decode_tokens([[0, 1]])
    assert decode_tokens([0, 1, 25, 27]) == "a b z <27>" and decode_tokens([]) == ""


@pytest.mark.parametrize("name", ["load_trained", "training_record"])
@pytest.mark.parametrize(("bad", "error"), [(3, ValueError), (0, ValueError), (True, TypeError), ("2", TypeError)])
def test_the_shipped_checkpoints_are_one_and_two_layers(name, bad, error):
    with pytest.raises(error, match="num_layers must be 1 or 2"):
        _door(name)(bad)


def test_encode_letters_door_names_what_it_cannot_encode():
    encode_letters = _door("encode_letters")
    with pytest.raises(ValueError, match=r"\['!', '1'\]"):
        encode_letters("a 1 b!")
    with pytest.raises(TypeError, match="string of letters"):
        encode_letters([0, 1])
    assert encode_letters("Ab c").tolist() == [0, 1, 2]
