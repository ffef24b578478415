"""The command line of ``python -m mhattn.train``: every argument checked before training starts.

A bad value ends in argparse's usage message naming the option, never in a traceback after
minutes of training; ``--out`` is tried (a file created and removed in its folder) first.
Ctrl-C ends the command with status 130 and says whether the checkpoint was written; a
checkpoint that cannot be written at the end (its folder was removed meanwhile) ends it with
status 1, and nothing is written anywhere else.
"""

import argparse
import importlib.util
import os
import platform
import sys
import time
import uuid

import numpy as np

from .. import checks
from ..checks.checkpoint_write import save_target
from .circuits import claims, measure
from .shipped import training_record
from .train import BATCH_SIZE, LEARNING_RATE, STEPS, keep_freed_memory, train

DESCRIPTION = (
    "Train the chapter's tiny attention-only transformer (mhattn.learn.model.InductionModel) on the "
    "induction task, with the chapter's own backward pass and Adam, and save it as a .npz checkpoint. "
    "The checkpoint records the time its run took. {recipe_time}"
)
EPILOG = "example: python -m mhattn.train --layers 2 --seed 0 --out induction.npz"
#: The deepest model the command trains. At initialisation every layer multiplies the residual
#: stream's mean square by about 1 + 2 * 2 = 5 (He initialisation doubles the variance in W_v and
#: in W_o, and attention with large scores passes one position's value on), so a deep model's
#: scores are huge and its softmax rows nearly one-hot; in float32 the first step's backward pass
#: then overflows, at 26 to 30 layers (fourteen seeds: mean 28.0, standard deviation 0.96). The
#: limit is that mean less six standard deviations.
MAX_LAYERS = 22
INTERRUPTED = 130  #: the exit status of a command ended by Ctrl-C (128 + SIGINT), as a shell reports it
#: The peak memory of one training step, per sequence of the batch: about 90 kB, plus 60 kB per layer, in
#: float32 (measured on steps of 1024 and 4096 sequences with one and four layers); float64 doubles it.
STEP_BYTES = {"per_sequence": 90e3, "per_sequence_and_layer": 60e3}


def _argument(check):
    """An argparse ``type=``: parse with ``check``, turning its TypeError/ValueError into a usage error."""

    def parse(text):
        try:
            return check(text)
        except (TypeError, ValueError, OSError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = check.__name__
    return parse


def _int(name, check):
    def parse_int(text):
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name} must be an int; got {text!r}") from None
        return check(value)

    return _argument(parse_int)


def _layers(value):
    value = checks.positive_int("layers", value)
    if value > MAX_LAYERS:
        raise ValueError(f"layers must be an int in [1, {MAX_LAYERS}] (deeper, the first steps overflow); got {value}")
    return value


def _learning_rate(text):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"lr must be a finite float > 0; got {text!r}") from None
    return checks.learning_rate(value)


def writable_out(text):
    """The checkpoint path (``.npz`` appended if missing), checked as the save will check it, before training.

    A link that another user planted, or a read-only file, is refused as :meth:`InductionModel.save
    <mhattn.learn.model.InductionModel.save>` refuses it; then a file is created and removed in the folder
    the checkpoint will be written to.
    """
    try:
        path, target, _ = save_target(text)
    except (FileNotFoundError, NotADirectoryError):  # no such folder: the probe below says which
        path = checks.checkpoint_path(text)
        target = os.path.abspath(path)
    except OSError as error:  # a link of another user's, a read-only file: its message, without the errno
        raise OSError(error.strerror or str(error)) from None
    folder = os.path.dirname(target)
    probe = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        raise OSError(f"cannot write {path}: {error.strerror} ({folder})") from None
    os.unlink(probe)
    return path


def machine():
    """The machine in words: CPU model (from /proc/cpuinfo where there is one), cores, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as file:
            names = [line.split(":", 1)[1].strip() for line in file if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()}"


def recipe_time():
    """The default recipe's time, in words, as the shipped two-layer model's own run recorded it."""
    record = training_record()
    return (f"The default recipe took {record['cpu_seconds']:.0f} s of CPU time on one core when it trained the "
            f"shipped model (on {record['machine']}, 1-minute load average up to {record['load_average']:.1f}).")


def parser():
    """The argument parser: plain-text help, with every option's default."""
    cli = argparse.ArgumentParser(prog="python -m mhattn.train", description=DESCRIPTION.format(
        recipe_time=recipe_time()), epilog=EPILOG)
    cli.add_argument("--layers", type=_int("layers", _layers), default=2,
                     help=f"attention layers, an int in [1, {MAX_LAYERS}]; a deeper model overflows float32 at its "
                     "first step (default: 2)")
    cli.add_argument("--seed", type=_int("seed", checks.seed), default=0,
                     help="seeds the weights and the batches, an int in [0, 2**32 - 1] (default: 0)")
    cli.add_argument("--steps", type=_int("steps", lambda v: checks.positive_int("steps", v)), default=STEPS,
                     help=f"training steps, an int >= 1 (default: {STEPS})")
    cli.add_argument("--lr", type=_argument(_learning_rate), default=LEARNING_RATE,
                     help=f"Adam's step size, a finite float > 0 (default: {LEARNING_RATE})")
    cli.add_argument("--batch-size", type=_int("batch_size", lambda v: checks.positive_int("batch_size", v)),
                     default=BATCH_SIZE, help=f"sequences per step, an int >= 1 (default: {BATCH_SIZE})")
    cli.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                     help="the dtype the forward and backward compute in; the weights stay float64 "
                     "(default: float32)")
    cli.add_argument("--out", type=_argument(writable_out), required=True,
                     help="the checkpoint file to write; .npz is appended if missing (required, no default)")
    cli.add_argument("--threads", type=_int("threads", lambda v: checks.positive_int("threads", v)), default=1,
                     help="BLAS threads, an int >= 1; one is fastest on a busy machine (default: 1)")
    cli.add_argument("--quiet", action="store_true", help="no progress bar (default: off, the bar is shown)")
    return cli


def parse(argv=None):
    """The checked arguments: a usage error (exit status 2) for any bad value, or a batch this machine cannot hold."""
    cli = parser()
    args = cli.parse_args(argv)
    need = step_bytes(args.batch_size, args.layers, args.dtype)
    have = physical_memory()
    if have is not None and need > have:
        cli.error(f"--batch-size {args.batch_size} needs about {need / 2**30:.0f} GiB for one training step of "
                  f"{args.layers} layers in {args.dtype}; this machine has {have / 2**30:.0f} GiB")
    return args


def step_bytes(batch_size, layers, dtype):
    """About how much memory one training step takes, in bytes (:data:`STEP_BYTES`)."""
    per_sequence = STEP_BYTES["per_sequence"] + STEP_BYTES["per_sequence_and_layer"] * layers
    return batch_size * per_sequence * (2 if dtype == "float64" else 1)


def physical_memory():
    """The machine's memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def missing_extras(quiet):
    """The optional modules this run would use and this installation lacks: threadpoolctl, tqdm (for the bar).

    The trainer runs without them: BLAS keeps the environment's thread setting, and a line
    every tenth of the run stands in for the bar.
    """
    wanted = ["threadpoolctl"] + ([] if quiet else ["tqdm"])
    return [name for name in wanted if importlib.util.find_spec(name) is None]


def main(argv=None):
    """The command line: train, save, and print what the heads learned (:func:`mhattn.learn.circuits.measure`)."""
    args = parse(argv)
    missing = missing_extras(args.quiet)
    if "threadpoolctl" in missing:
        print("threadpoolctl is not installed: BLAS uses the threads the environment gives it "
              "(OPENBLAS_NUM_THREADS=1 for one)", file=sys.stderr)
    if "tqdm" in missing:
        print("tqdm is not installed: a line every tenth of the run stands in for the progress bar", file=sys.stderr)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    start, cpu_start = time.perf_counter(), time.process_time()
    keep_freed_memory()  # the command's own process: twice as fast on Linux, no effect on the numbers
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is reported below, once, not warned of
            model = train(
                args.layers, seed=args.seed, steps=args.steps, lr=args.lr, batch_size=args.batch_size,
                dtype=np.dtype(args.dtype), progress=not args.quiet, threads=args.threads,
            )
    except KeyboardInterrupt:
        print(f"interrupted during training: nothing was written, {args.out} is as it was", file=sys.stderr)
        return INTERRUPTED
    except FloatingPointError as error:  # a step size so large that a step overflowed
        parser().print_usage(sys.stderr)
        print(f"python -m mhattn.train: error: training diverged with --lr {args.lr:g} ({error}); a smaller "
              f"--lr keeps it finite (default: {LEARNING_RATE}). Nothing was written.", file=sys.stderr)
        return 2
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    settings = {"seed": args.seed, "steps": args.steps, "lr": args.lr, "batch_size": args.batch_size}
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    record = {"seconds": seconds, "cpu_seconds": cpu_seconds, "machine": machine(),
              "load_average": max(load_before, load_after)}
    try:
        out = model.save(args.out, **settings, **record)  # the path written: args.out, .npz appended if missing
    except OSError as error:  # the folder went away during training
        print(f"{error}; the trained model was not saved", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the save is atomic: the previous file, or none, is left as it was
        print(f"interrupted while saving: nothing was written, {args.out} is as it was", file=sys.stderr)
        return INTERRUPTED
    try:
        _report(model, args.steps, out, record)
    except KeyboardInterrupt:
        print(f"interrupted after saving: the checkpoint at {out} was written", file=sys.stderr)
        return INTERRUPTED
    return 0


def _report(model, steps, out, record):
    """Print how long training took and what the heads learned (:func:`mhattn.learn.circuits.measure`)."""
    result = measure(model)
    print(f"trained {steps} steps in {record['seconds']:.1f} s ({record['cpu_seconds']:.1f} s of CPU) on "
          f"{record['machine']} (1-minute load average up to {record['load_average']:.1f}); saved {out}")
    print(f"accuracy on the predictable positions: {result['accuracy']:.3f}")
    for i, scores in enumerate(result["previous_token"]):
        print(f"layer {i} previous-token scores: {np.round(scores, 2)}; prefix-matching scores: "
              f"{np.round(result['prefix_matching'][i], 2)}; copying scores: {np.round(result['copying'][i], 2)}")
    verdicts = claims(result)
    for name, ok in verdicts.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    if not all(verdicts.values()) and steps < STEPS:
        print(f"hint: {steps} steps are too few to learn the task; the default settings train {STEPS} "
              f"steps for it (--steps {STEPS})")
