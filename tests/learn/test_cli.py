"""``python -m mhattn.train`` on a first run: it trains without its optional helpers (saying what it does instead),
a short run says how many steps it needs, the help and the README state the time the shipped model's run recorded,
and a folder that disappears during training ends the run with a message, writing nowhere else."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mhattn
from mhattn.learn import cli
from mhattn.learn.train import BATCH_SIZE, STEPS


@pytest.mark.parametrize(("blocked", "flags", "says"), [
    ("tqdm", [], "training: step 1/1"),  # a plain line stands in for the bar
    ("threadpoolctl", ["--quiet"], "OPENBLAS_NUM_THREADS=1"),
])
def test_the_trainer_runs_without_its_optional_helpers_and_says_so(tmp_path, blocked, flags, says):
    script = textwrap.dedent(f"""
        import sys
        sys.modules[{blocked!r}] = None  # as if not installed: importing it raises ImportError
        from mhattn.learn.cli import main
        sys.exit(main(["--out", {str(tmp_path / "m")!r}, "--steps", "1", "--layers", "1", "--batch-size", "4"]
                      + {flags!r}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"{blocked} is not installed" in result.stderr and says in result.stderr
    assert "Traceback" not in result.stderr and (tmp_path / "m.npz").exists()


def shipped_record():
    """The shipped two-layer checkpoint's record, read with NumPy alone (not through the package)."""
    with np.load(Path(mhattn.__file__).parent / "data" / "induction.npz", allow_pickle=False) as data:
        keys = ("cpu_seconds", "load_average", "machine", "steps", "batch_size", "seed")
        return {key: data[key].item() for key in keys}


def test_the_help_states_the_time_the_shipped_models_own_run_recorded():
    help_text = " ".join(cli.parser().format_help().split())  # argparse wraps lines
    record = shipped_record()
    assert (record["steps"], record["batch_size"], record["seed"]) == (STEPS, BATCH_SIZE, 0)  # the default recipe
    assert f"took {record['cpu_seconds']:.0f} s of CPU time on one core" in help_text
    assert f"(on {record['machine']}, 1-minute load average up to {record['load_average']:.1f})" in help_text


def test_the_readme_states_the_time_the_shipped_models_own_run_recorded():
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    stated = re.search(r"The trainer writes a checkpoint \(for the chapter's two-layer model, (\d+) s of CPU time "
                       r"on one core: the shipped model's own run recorded it", readme)
    assert stated, "the README should say how long the trainer takes"
    record = shipped_record()
    assert int(stated.group(1)) == round(record["cpu_seconds"])
    assert f"whose load average reached {record['load_average']:.1f}" in readme


TINY = ["--steps", "2", "--batch-size", "4", "--quiet", "--layers", "1"]


def test_a_run_too_short_to_learn_says_how_many_steps_the_task_needs(tmp_path, capsys):
    assert cli.main(["--out", str(tmp_path / "m")] + TINY) == 0
    out = capsys.readouterr().out
    assert "FAIL" in out and f"--steps {cli.STEPS}" in out


def test_a_folder_that_disappears_during_training_ends_the_run_clearly_and_writes_nowhere_else(
        tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    trained = {}
    monkeypatch.setattr(cli, "train", _wrap(cli.train, folder, trained))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))  # where a copy elsewhere would land
    assert cli.main(["--out", str(folder / "m")] + TINY) == 1
    err = capsys.readouterr().err
    assert ".tmp" not in err.split(";")[0] and str(folder / "m.npz") in err
    assert "the trained model was not saved" in err and "model" in trained
    assert list(tmp_path.rglob("*")) == []


def _wrap(train, folder, trained):
    def train_then_remove_the_folder(*args, **kwargs):
        trained["model"] = train(*args, **kwargs)
        os.rmdir(folder)
        return trained["model"]

    return train_then_remove_the_folder


def _never_trains(monkeypatch):
    monkeypatch.setattr(cli, "train", lambda *args, **kwargs: pytest.fail("trained before refusing the arguments"))


def test_a_read_only_out_is_a_usage_error_before_training(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.npz"
    path.write_bytes(b"an earlier checkpoint")
    path.chmod(0o444)
    _never_trains(monkeypatch)
    with pytest.raises(SystemExit) as ended:
        cli.main(["--out", str(path)] + TINY)
    assert ended.value.code == 2 and "read-only (mode 444)" in capsys.readouterr().err
    assert path.read_bytes() == b"an earlier checkpoint" and os.listdir(tmp_path) == ["m.npz"]


def test_a_batch_larger_than_the_machine_can_hold_is_a_usage_error_before_training(tmp_path, capsys, monkeypatch):
    _never_trains(monkeypatch)
    monkeypatch.setattr(cli, "physical_memory", lambda: 8 * 2**30)  # an 8 GiB machine
    with pytest.raises(SystemExit) as ended:
        cli.main(["--out", str(tmp_path / "m"), "--batch-size", "100000000", "--quiet"])
    err = capsys.readouterr().err
    assert ended.value.code == 2 and "--batch-size 100000000 needs about" in err and "this machine has 8 GiB" in err
    assert os.listdir(tmp_path) == []


def test_the_step_memory_estimate_bounds_a_real_step(tmp_path):
    """The estimate of one step's memory is at least what a step of 1024 sequences and 3 layers really takes."""
    script = textwrap.dedent("""
        import resource
        from mhattn.learn.train import initial_model
        from mhattn.learn.training_step import loss_and_grads
        from mhattn.learn.task import induction_batch
        import numpy as np
        model = initial_model(3, 0)
        tokens, n, *_ = induction_batch(np.random.default_rng(0), 1024)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        loss_and_grads(model, tokens, n, np.float32)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
    """)
    grown = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                               env=os.environ | {"OPENBLAS_NUM_THREADS": "1"}).stdout)
    assert grown <= cli.step_bytes(1024, 3, "float32")


def test_a_step_size_that_makes_training_diverge_ends_in_a_usage_message(tmp_path, capsys):
    assert cli.main(["--out", str(tmp_path / "m"), "--lr", "1e30"] + TINY) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "training diverged with --lr 1e+30" in err and "a smaller --lr" in err
    assert os.listdir(tmp_path) == []
