"""The head measures of a Llama are the toy model's own, applied block by block, on repeated random tokens."""

import numpy as np
import pytest

from mhattn.learn import prefix_matching_score, previous_token_score, token_losses
from mhattn.llm import first_token_share, head_scores, induction_ids, repeat_loss, tiny_llama


@pytest.fixture(scope="module")
def model():
    return tiny_llama(seed=0)


def test_induction_ids_repeat_distinct_ordinary_tokens(model):
    ids = induction_ids(model, half_len=20, num_sequences=3, seed=1)
    assert ids.shape == (3, 40)
    np.testing.assert_array_equal(ids[:, :20], ids[:, 20:])
    assert all(len(set(row[:20])) == 20 for row in ids)
    assert ids.min() >= 3  # never <|endoftext|>, <|im_start|>, <|im_end|>
    np.testing.assert_array_equal(ids, induction_ids(model, half_len=20, num_sequences=3, seed=1))


def test_head_scores_are_the_toy_models_scores_of_every_block(model):
    ids = induction_ids(model, half_len=10)
    previous, prefix = head_scores(model, ids)
    weights = model(ids, need_weights=True)[1]
    for layer in range(2):
        np.testing.assert_array_equal(previous[layer], previous_token_score(weights[:, layer]))
        np.testing.assert_array_equal(prefix[layer], prefix_matching_score(weights[:, layer], ids))


def test_first_token_share_of_a_pure_sink_is_one_and_of_a_previous_token_head_is_one_over_the_later_queries():
    seq = 5
    sink = np.zeros((seq, seq))
    sink[:, 0] = 1.0
    previous = np.eye(seq, k=-1)
    previous[0, 0] = 1.0
    weights = np.stack([sink, previous])[None, None]  # (1 sequence, 1 block, 2 heads, seq, seq)
    np.testing.assert_allclose(first_token_share(weights), [[1.0, 1 / (seq - 1)]])


def test_repeat_loss_scores_the_predictable_tokens_of_the_repeat_and_ablation_changes_it(model):
    ids = induction_ids(model, half_len=8, num_sequences=2)
    loss, accuracy = repeat_loss(model, ids)
    logits = model(ids)[0]
    np.testing.assert_allclose(loss, token_losses(logits, ids)[:, 8:].mean(), rtol=1e-6)
    assert accuracy == np.mean(logits[:, 8:-1].argmax(-1) == ids[:, 9:])
    assert repeat_loss(model, ids, ablate=[(0, None), (1, None)])[0] != loss


def test_the_measures_refuse_sequences_that_do_not_repeat_and_halves_the_vocabulary_cannot_hold(model):
    with pytest.raises(ValueError, match="second half repeats the"):
        head_scores(model, np.array([[5, 6, 7, 8]]))
    with pytest.raises(ValueError, match="ids must be integer token ids in \\[0, 259\\)"):
        repeat_loss(model, np.array([[5, 300, 5, 300]]))
    with pytest.raises(ValueError, match="half_len must be at most the 256 ordinary tokens"):
        induction_ids(model, half_len=257)
    with pytest.raises(ValueError, match="ablate: head must be"):
        repeat_loss(model, induction_ids(model, half_len=4), ablate=[(0, 4)])
    with pytest.raises(TypeError, match="model must be an mhattn.llm.LlamaModel"):
        head_scores(None, np.array([[5, 6, 5, 6]]))
