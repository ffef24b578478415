"""What a door costs: a chapter-size call through the public surface against its plain body, side by side.

Every public call of ``mhattn`` is checked at its door (arguments, then the result); the
package's own code calls the plain functions. This prints, for calls the size of the
chapter's examples, the median time of the door and of the plain body in one run (blocks
of calls alternating between the two), their ratio, and the ratio of the fastest blocks.
The plain body of a door is its ``__wrapped__``.

Blocks are timed in CPU seconds of this process by default (``--clock cpu``): on a machine
that other work shares, a block that lost the processor halfway would count that wait as
wall time. ``--clock wall`` times them with the wall clock.

    python benchmarks/bench_door.py [--repeats 2000] [--clock cpu|wall]
"""

import argparse
import statistics
import time

import numpy as np

import mhattn

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def block_us(call, size=20, clock=time.process_time):
    """Time of one block of ``size`` calls, per call, in microseconds."""
    start = clock()
    for _ in range(size):
        call()
    return (clock() - start) / size * 1e6


def door_and_plain_us(door_call, plain_call, repeats, clock=time.process_time):
    """Median and fastest time per call of each, in blocks of 20 that alternate (so load hits both alike)."""
    for _ in range(50):  # warm up
        door_call(), plain_call()
    door, plain = [], []
    for _ in range(max(repeats // 20, 5)):
        door.append(block_us(door_call, clock=clock))
        plain.append(block_us(plain_call, clock=clock))
    return (statistics.median(door), min(door)), (statistics.median(plain), min(plain))


def cases():
    """``(name, door call, plain call)`` for the chapter-size calls: batch 1, 6 tokens, d_model 64, 4 heads."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 6, 64))
    mask = mhattn.causal_mask(6)
    mha = mhattn.MultiHeadAttention(64, 4)
    plain_forward = type(mha).forward.__wrapped__
    Q, K, V = (rng.standard_normal((1, 4, 6, 16)) for _ in range(3))
    plain_attention = mhattn.scaled_dot_product_attention.__wrapped__
    scores = rng.standard_normal((1, 4, 6, 6))
    return [
        ("MultiHeadAttention(64, 4)(x, mask), x (1, 6, 64)", lambda: mha(x, mask), lambda: plain_forward(mha, x, mask)),
        ("scaled_dot_product_attention, (1, 4, 6, 16)", lambda: mhattn.scaled_dot_product_attention(Q, K, V, mask),
         lambda: plain_attention(Q, K, V, mask)),
        ("softmax, (1, 4, 6, 6)", lambda: mhattn.softmax(scores), lambda: mhattn.softmax.__wrapped__(scores)),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000, help="calls timed per case (default 2000)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="what a block's time is (default cpu)")
    args = parser.parse_args(argv)
    print(f"{'call':<52} {'door (us)':>10} {'plain (us)':>11} {'ratio':>6} {'fastest':>8}")
    for name, door_call, plain_call in cases():
        clock = CLOCKS[args.clock]
        (door, door_min), (plain, plain_min) = door_and_plain_us(door_call, plain_call, args.repeats, clock)
        print(f"{name:<52} {door:>10.1f} {plain:>11.1f} {door / plain:>6.2f} {door_min / plain_min:>8.2f}")


if __name__ == "__main__":
    main()
