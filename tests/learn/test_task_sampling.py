"""The induction task's blocks: uniform ordered samples of distinct tokens, in memory that ignores the vocabulary.

The distribution is checked against its definition with Pearson's chi-square: every ordered
triple of distinct tokens has probability ``1 / (V (V - 1) (V - 2))``. The bound is the
chi-square quantile at a false-alarm rate of 1e-9 (Wilson-Hilferty), so a correct sampler
fails it with any seed about once in a billion runs, and a sampler that favours some
triples by a few percent fails it here.
"""

import hashlib
import math
import re
import tracemalloc

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn.checks import door
from mhattn.checks.training_task import layout_args
from mhattn.learn import task
from mhattn.learn.task import induction_batch

layout = door(task.layout, layout_args, results_finite=False)


def chi_square_bound(dof, z=6.0):
    """Wilson-Hilferty: the chi-square quantile ``z`` standard normal deviations up (z = 6: a rate of 1e-9)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


@pytest.mark.parametrize(("vocab", "max_len"), [(6, 6), (7, 6)], ids=["whole-vocabulary shuffle", "rank draw"])
def test_a_block_is_a_uniform_ordered_sample_of_distinct_tokens(vocab, max_len):
    draws = 300 * vocab * (vocab - 1) * (vocab - 2)  # 300 expected per triple
    n = np.full(draws, 3)
    tokens = layout(np.random.default_rng(11), n, np.zeros(draws, int), np.zeros(draws, int), vocab=vocab,
                    max_len=max_len)
    block = tokens[:, :3]  # (draws, 3): the first copy
    np.testing.assert_array_equal(tokens[:, 3:6], block)  # the second copy follows it
    assert all((block[:, i] != block[:, j]).all() for i, j in ((0, 1), (0, 2), (1, 2)))  # distinct tokens
    cells = vocab * (vocab - 1) * (vocab - 2)
    counts = np.bincount((block[:, 0] * vocab + block[:, 1]) * vocab + block[:, 2], minlength=vocab**3)
    counts = counts[counts > 0]
    assert len(counts) == cells  # every ordered triple of distinct tokens occurs
    expected = draws / cells
    assert ((counts - expected) ** 2 / expected).sum() < chi_square_bound(cells - 1)


def test_a_large_vocabulary_costs_memory_for_the_sequences_only():
    """batch x max_len int64 is 16 KiB here; a (batch, vocab) permutation would be 512 MiB."""
    rng = np.random.default_rng(0)
    tracemalloc.start()
    try:
        tokens = induction_batch(rng, 64, vocab=10**6, max_len=32)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 32 * 8 * 64  # 64 arrays the size of the batch
    assert tokens.shape == (64, 32) and tokens.max() < 10**6


def _digest(*arrays):
    hasher = hashlib.sha256()
    for array in arrays:
        hasher.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return hasher.hexdigest()[:16]


def test_the_shipped_settings_draw_the_same_sequences_as_the_checkpoints_saw():
    """The digests were taken with the (batch, vocab) shuffle the shipped models were trained with."""
    rng = np.random.default_rng(0)
    assert _digest(*[part for _ in range(3) for part in induction_batch(rng, 64)]) == "8183540ba3eaa540"
    assert _digest(*induction_batch(np.random.default_rng(1), 64, at_start=True)) == "92b95a98a4bf64c7"
    fixed = layout(np.random.default_rng(2), np.array([3, 16, 1]), np.array([0, 0, 30]), np.array([5, 0, 0]))
    assert _digest(fixed) == "64d7eade1aeb8994"


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_layout_refuses_an_empty_batch_by_name(dtype):
    empty = np.array([], dtype=dtype)
    with pytest.raises(ValueError, match=re.escape("for at least one sequence; got shape (0,)")):
        layout(np.random.default_rng(0), empty, empty, empty)


def test_layout_reports_a_huge_unsigned_offset_as_the_number_it_is():
    huge = np.array([2**64 - 1], dtype=np.uint64)
    with pytest.raises(ValueError, match=re.escape(f"offset must be in [0, max_len = 32]; got {2**64 - 1}")):
        layout(np.random.default_rng(0), np.array([2], dtype=np.uint64), huge, np.array([0], dtype=np.uint64))


def test_layout_refuses_a_repeat_that_does_not_fit():
    with pytest.raises(ValueError, match=re.escape("offset + 2n + gap <= seq_len = 32")):
        layout(np.random.default_rng(0), np.array([10]), np.array([10]), np.array([3]))
    with pytest.raises(ValueError, match="n, offset and gap must have one shape"):
        layout(np.random.default_rng(0), np.array([4, 4]), np.array([0]), np.array([0]))


def test_a_refused_layout_draws_nothing():
    rng, twin = np.random.default_rng(5), np.random.default_rng(5)
    with pytest.raises(ValueError):
        layout(rng, np.array([], int), np.array([], int), np.array([], int))
    assert rng.random() == twin.random()


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(mhattn.learn.induction_batch, dict(rng=np.random.default_rng(0), batch_size=2), rng=[None]),
    *refusals(
        mhattn.learn.layout,
        dict(rng=np.random.default_rng(0), n=np.array([2]), offset=np.array([1]), gap=np.array([0]), vocab=6,
             max_len=8),
        rng=[None]),
    *refusals(
        mhattn.learn.induction_batch,
        dict(rng=np.random.default_rng(0), batch_size=2),
        max_len=[1]),
    *refusals(
        mhattn.learn.repeated_positions,
        dict(n=np.array([3, 4]), max_len=16),
        n=[np.array([-999997, -999996]), np.array([[3, 4]])],
        offset=[np.array([1, 2, 3])],
        gap=[np.array([1, 2, 3])]),
    *refusals(
        mhattn.learn.determined_positions,
        dict(tokens=np.full((2, 8), 0), n=np.array([2, 3])),
        tokens=[np.full((1, 2, 8), 0), np.full((2, 1), 0)],
        n=[np.full((1,), 2), np.random.default_rng(0).standard_normal((2,)), np.array([-1, 2])],
        offset=[np.array([1, 2, 3])],
        gap=[np.array([-2, 0])]),
    *refusals(
        mhattn.learn.accuracy,
        dict(logits=np.full((2, 8, 4), 0.0), tokens=np.full((2, 8), 0), n=np.array([2, 3])),
        logits=[np.full((1, 2, 8, 4), 0.0), np.full((2, 7, 4), 0.0)],
        tokens=[np.full((1, 2, 8), 0)],
        n=[np.full((1,), 2), np.random.default_rng(0).standard_normal((2,))],
        gap=[np.full((3,), 0)]),
    *refusals(
        mhattn.learn.block_lengths,
        dict(max_len=32),
        max_len=[1]),
    *refusals(
        mhattn.learn.length_probabilities,
        dict(max_len=32),
        max_len=[1]),
    *refusals(
        mhattn.learn.layout,
        dict(rng=np.random.default_rng(0), n=np.full((1,), 2), offset=np.full((1,), 1), gap=np.full((1,), 0), vocab=6,
             max_len=8),
        n=[np.full((1,), -999998), np.full((1,), 1000002), np.full((1, 1), 2)],
        offset=[np.full((1,), -999999), np.full((1, 1), 1), np.full((2,), 1)],
        gap=[np.full((1,), -1000000), np.full((1, 1), 0)],
        vocab=[1]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
