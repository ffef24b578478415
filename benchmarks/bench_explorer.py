"""How long one explorer update takes at the largest settings, compute and render together.

    python benchmarks/bench_explorer.py [--rounds 15]

Largest settings: d_model=64, num_heads=8, seq_len=32 (8 heatmaps + the PCA panel). Each
round times, one after the other (so that load from other programs hits all alike):

- ``seq_len``   : seq_len 32 -> 31: new ticks, so the static background is redrawn too;
- ``seed``      : a new seed: only the heatmaps, points, arrows and labels are redrawn;
- ``num_heads`` : 4 -> 8 heads: panels shown and moved, the background redrawn;
- ``tokens``    : trained weights, 32 new letters typed: the model's two layers run, the
  background (letter ticks) redrawn;
- ``layer``     : trained weights, layer 0 -> 1 at 32 letters;
- ``naive``     : what a first version would do: the same computation, then a new pyplot
  figure with 9 panels drawn from nothing, saved as PNG and closed.

Each explorer time is what a reader waits for after moving a control: the observer
runs the model, updates the artists and encodes the two PNGs (heatmaps, PCA plot; ``SCALE``
bitmap pixels per CSS pixel) that the Image widgets send. The verdict compares each median
with 250 ms, the time within which an update still feels immediate.
"""

import argparse
import io
import os
import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mhattn.explorer import compute_frame, explorer  # noqa: E402
from mhattn.explorer.draw import DPI, FIGSIZE, SCALE  # noqa: E402

LIMIT_MS = 250


def naive_update(ex):
    """Recompute, then draw all 9 panels on a brand-new pyplot figure, as PNG bytes."""
    frame = compute_frame(ex.current_state())  # the numbers, recomputed
    weights, allowed = frame.weights, np.broadcast_to(frame.allowed, frame.weights.shape)  # (num_heads, seq, seq)
    fig, axes = plt.subplots(2, 5, figsize=FIGSIZE, dpi=DPI * SCALE)
    for h, ax in enumerate(axes[:, :4].ravel()):
        image = ax.imshow(np.ma.masked_array(weights[h], mask=~allowed[h]), cmap="Blues", vmin=0, vmax=1)
        ax.set_title(f"head {h}")
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.colorbar(image, ax=axes[:, :4])
    gs = axes[0, 4].get_gridspec()
    for ax in axes[:, 4]:
        ax.remove()
    pca = fig.add_subplot(gs[:, 4])
    start, end = frame.inputs_2d, frame.outputs_2d
    pca.scatter(*start.T, facecolors="white", edgecolors="C0")
    pca.scatter(*end.T, color="C0")
    pca.quiver(*start.T, *(end - start).T, angles="xy", scale_units="xy", scale=1)
    for i, point in enumerate(end):
        pca.annotate(str(i), point)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds

    ex = explorer(d_model=64, num_heads=8, seq_len=32, seed=0)
    trained = explorer(trained=True, tokens="abcdefghijklmnopabcdefghijklmnop")
    seeds = iter(range(1, 10**6))
    letters = np.random.default_rng(0)

    def random_letters():
        return "".join(letters.choice(list("abcdefgh"), 32))

    def largest():
        """Back to the largest settings (untimed)."""
        ex.num_heads.value, ex.seq_len.value = 8, 32

    def set_value(control, value):
        return lambda: setattr(control, "value", value)

    # name: (untimed preparation, the timed change); each change starts from the largest settings
    cases = {
        "seq_len": (largest, set_value(ex.seq_len, 31)),
        "seed": (largest, lambda: setattr(ex.seed, "value", next(seeds))),
        "num_heads": (lambda: setattr(ex.num_heads, "value", 4), set_value(ex.num_heads, 8)),
        "tokens": (lambda: None, lambda: setattr(trained.tokens, "value", random_letters())),
        "layer": (lambda: setattr(trained.layer, "value", 0), set_value(trained.layer, 1)),
        "naive": (largest, lambda: naive_update(ex)),
    }
    times = {name: [] for name in cases}
    for round_ in range(rounds + 1):  # round 0 warms up fonts and caches, untimed
        for name, (prepare, change) in cases.items():
            prepare()
            start = time.perf_counter()
            change()
            if round_:
                times[name].append(time.perf_counter() - start)
    largest()

    assert ex.seq_len.value == 32 and ex.num_heads.value == 8 and len(ex.drawing.head_images) == 8
    assert trained.token_error is None and trained.frame.seq_len == 32
    size = f"{FIGSIZE[0] * DPI * SCALE:.0f}x{FIGSIZE[1] * DPI * SCALE:.0f} px"
    print(
        f"explorer update at d_model=64, num_heads=8, seq_len=32, {size} PNG, {rounds} rounds, "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    naive = statistics.median(times["naive"])
    print(f"{'update':<12}{'median ms':>10}{'min ms':>9}{'max ms':>9}{'naive / this':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<12}{1e3 * median:>10.1f}{1e3 * min(values):>9.1f}{1e3 * max(values):>9.1f}{naive / median:>13.2f}x"
        )
    worst = max(statistics.median(values) for name, values in times.items() if name != "naive")
    verdict = "within" if 1e3 * worst < LIMIT_MS else "OVER"
    print(f"slowest explorer update: median {1e3 * worst:.1f} ms, {verdict} {LIMIT_MS} ms")


if __name__ == "__main__":
    main()
