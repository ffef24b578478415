"""The causal experiments of mhattn.learn.experiments, on small untrained models whose answer is known.

- With no head removed, :func:`forward_without_key_path` is the model's own forward, for a model
  whose layers rotate queries and keys (RoPE) as for one with learned positions only. Both
  compute the same sums of float64 products of order 1 over ``d_model`` terms in a different
  order, so they agree to ~1e-14 of the logits' size; 1e-12 of it leaves room for that order
  and nothing else (a layer computed without its rotation is off by O(1)).
- :func:`gap_accuracy` and :func:`offset_accuracy` feed the model blocks of exactly the lengths
  they were given (and the offsets that fit), read back from the sequences the model saw.
"""

import numpy as np
import pytest

from mhattn.learn.experiments import forward_without_key_path, gap_accuracy, offset_accuracy
from mhattn.learn.model import InductionModel
from mhattn.learn.task import induction_batch


def with_rope(model, pairing, folder):
    """``model`` with every layer rotating queries and keys (``pairing``), built the way a checkpoint loads one."""
    path = model.save(folder / "plain")
    with np.load(path) as stored:
        arrays = dict(stored)
    for i in range(len(model.layers)):
        arrays[f"layer{i}.rope"] = np.array(pairing)
    np.savez(folder / "rotary.npz", **arrays)
    return InductionModel.load(folder / "rotary.npz")


@pytest.mark.parametrize("pairing", [None, "half", "interleaved"])
def test_forward_without_key_path_with_no_head_removed_is_the_forward(pairing, tmp_path):
    plain = InductionModel(2, vocab=12, max_len=10, d_model=16, num_heads=4, seed=8)
    model = plain if pairing is None else with_rope(plain, pairing, tmp_path)
    tokens = induction_batch(np.random.default_rng(9), 6, vocab=12, max_len=10)[0]  # (6, 10)
    expected = model.forward(tokens)[0]  # (6, 10, 12)
    if pairing is not None:  # the rotation changes the logits by O(1): a forward without it is caught
        assert np.abs(expected - plain.forward(tokens)[0]).max() > 0.1
    got = forward_without_key_path(model, tokens, [])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


class Recording(InductionModel):
    """An untrained model that keeps every batch of tokens it is asked to read."""

    def forward(self, tokens, **kwargs):
        self.seen.append(np.array(tokens, copy=True))
        return super().forward(tokens, **kwargs)


def longest_repeat(row, gap):
    """``(n, offsets)``: the longest blocks ``row[o : o + n]`` repeated after ``gap`` more tokens, and where they start.

    A random token just before the block may equal the one just before its repeat (1 in vocab):
    the block then also starts one earlier, at the same length. A longer block than the one
    placed needs all its tokens to match at a distance nothing placed them at: about 32 ** -5.
    """
    seq_len, found = len(row), (0, ())
    for n in range(1, (seq_len - gap) // 2 + 1):
        starts = tuple(o for o in range(seq_len - 2 * n - gap + 1)
                       if np.array_equal(row[o : o + n], row[o + n + gap : o + 2 * n + gap]))
        found = (n, starts) if starts else found
    return found


def test_gap_accuracy_draws_only_the_lengths_it_is_given():
    model = Recording(2, vocab=32, max_len=32, d_model=8, num_heads=2, seed=0)
    model.seen = []
    gaps = (2, 7)
    gap_accuracy(model, gaps, [4, 12], num_sequences=64, seed=3)
    assert len(model.seen) == len(gaps)
    lengths = {longest_repeat(row, g)[0] for g, batch in zip(gaps, model.seen, strict=True) for row in batch}
    assert lengths == {4, 12}


def test_offset_accuracy_measures_each_length_it_is_given_at_each_offset_that_fits():
    model = Recording(2, vocab=32, max_len=32, d_model=8, num_heads=2, seed=0)
    model.seen = []
    table = offset_accuracy(model, [4, 12], per_cell=4, seed=5, gap=3)
    cells = [(4, o) for o in range(32 - 8 - 3 + 1)] + [(12, o) for o in range(32 - 24 - 3 + 1)]
    assert len(model.seen) == len(cells)
    for (n, o), batch in zip(cells, model.seen, strict=True):
        for row in batch:
            length, starts = longest_repeat(row, 3)
            assert length == n and o in starts, (n, o, row)
    assert table.shape == (2, 22) and np.isnan(table[1, 6:]).all() and np.isfinite(table[0]).all()
