"""Every number and comparison that notebook 09's prose states, recomputed from the shipped checkpoints.

Each test names the notebook section whose prose it checks and uses the notebook's own seeds,
so the prose and the outputs it describes cannot drift apart. Where the prose quotes an
ablation, the test names its method (zero, mean or resample) and the baseline it is compared
to. Where it can, a test recomputes the number with plain loops instead of the helper the
notebook calls. The model targets themselves (offsets, gaps, positions, prefix matching,
copying, ablations) are in test_induction_model.py.
"""

from importlib import resources

import numpy as np
import pytest

from mhattn import softmax
from mhattn.learn.circuits import (
    composition_baseline,
    composition_ceiling,
    composition_ceilings,
    composition_score,
    composition_scores,
    copying_score,
    measure,
    offset_accuracy,
    offset_gap_accuracy,
    ov_circuit,
    path_ablation,
    prefix_matching_by_offset,
    previous_token_profile,
    previous_token_score,
    qk_circuit,
    segments,
)
from mhattn.learn.generate import generate
from mhattn.learn.letters import decode_tokens, encode_letters
from mhattn.learn.shipped import load_shortcut
from mhattn.learn.task import accuracy, induction_batch, layout
from mhattn.learn.train import EDGE_SHARE, initial_model
from mhattn.learn.weight_circuits import head_weights

CHANCE = 1 / 32  # one token of 32, guessed at random


@pytest.fixture(scope="module")
def shortcut():
    return load_shortcut()


@pytest.fixture(scope="module")
def result(model):
    return measure(model)  # the notebook's measure(model): 512 sequences, seed 2024


def cut(model, batch, heads, reads, method):
    """Accuracy with layer-0 ``heads`` replaced (``method``) in what layer 1's ``reads`` see."""
    tokens, n, offset, gap = batch
    return accuracy(path_ablation(model, tokens, heads, reads=reads, method=method), tokens, n, offset, gap)


def cell(m, n, offset, gap, per_cell=512, seed=11):
    """Accuracy of ``m`` on ``per_cell`` sequences with one block length, offset and gap."""
    rng = np.random.default_rng(seed)
    n_, o_, g_ = (np.full(per_cell, v) for v in (n, offset, gap))
    tokens = layout(rng, n_, o_, g_, vocab=32, max_len=32)
    return accuracy(m.forward(tokens)[0], tokens, n_, o_, g_)


def measure_accuracy(model, batch):
    tokens, n, offset, gap = batch
    return accuracy(model.forward(tokens)[0], tokens, n, offset, gap)


# --- set-up and section 1: the circuit -----------------------------------------------------------


def test_1_the_model_copies_every_determined_position_and_the_diagram_names_the_measured_heads(result):
    assert result["accuracy"] == 1.0  # "every determined position of 512 fresh sequences"
    assert result["previous_token_heads"] == [0] and result["induction_heads"] == [0, 1, 2, 3]  # the diagram's heads


# --- section 2: where the heads look -------------------------------------------------------------


def test_2_before_training_about_even_weights_after_it_one_step_back_and_on_the_target(model, result, batch):
    """Loops over sequences and queries, independent of the notebook's vectorised helpers."""
    tokens, n, offset, gap = batch
    for m, trained in ((initial_model(2, seed=0), False), (model, True)):
        weights = m.forward(tokens[:64])[1]
        # queries t >= 8, which see at least 9 keys: even weights give at most 1/9 there
        one_back = np.array([[weights[0][b, :, t, t - 1] for t in range(8, 32)] for b in range(64)])  # (64, 24, 4)
        target = []
        for b in range(64):
            start = offset[b] + n[b] + gap[b]
            for t in range(start, start + n[b] - 1):
                target.append(weights[1][b, :, t, t - n[b] - gap[b] + 1])
        target = np.array(target)  # (queries, 4)
        if trained:
            assert np.flatnonzero(one_back.mean(axis=(0, 1)) > 0.5).tolist() == [0]  # "one previous-token head"
            assert np.flatnonzero(target.mean(axis=0) > 0.5).tolist() == [0, 1, 2, 3]  # "all four ... on the target"
            # the figures, on all 512 sequences: head 0's mean weight on key t - 1 over every query t >= 1, and
            # each layer-1 head's mean weight on the target over every query of the second copy
            layer0, layer1 = model.forward(tokens)[1]
            assert 0.8 < np.mean([layer0[:, 0, t, t - 1].mean() for t in range(1, 32)]) < 0.9  # "peaks above 0.8"
            on_target = [layer1[b, :, t, t - n[b] - gap[b] + 1] for b in range(512)
                         for t in range(offset[b] + n[b] + gap[b], offset[b] + 2 * n[b] + gap[b] - 1)]
            assert np.all(np.abs(np.mean(on_target, axis=0) - 0.8) < 0.05)  # "all four heads peak near 0.8"
        else:
            assert one_back.mean(axis=(0, 1)).max() <= 0.07  # "at most 0.07 on key t - 1"
            assert target.mean(axis=0).max() < 0.1


# --- section 3: measuring the heads --------------------------------------------------------------


def test_3_the_previous_token_heads_part_scores_are_predicted_by_position_alone(model, result, batch):
    tokens, n, offset, gap = batch
    head = result["previous_token_heads"][0]
    profile = previous_token_profile(model, num_sequences=1024, seed=13)[head]  # (32,), other sequences
    weights = model.forward(tokens)[1][0]
    for name, queries in segments(n, 32, offset, gap).items():
        measured = previous_token_score(weights, queries)[head]
        by_position = np.mean([profile[t] for b, t in zip(*np.nonzero(queries), strict=True) if t >= 1])
        assert abs(measured - by_position) < 0.005, name  # "to within a few thousandths"
    parts = {name: round(float(scores[head]), 2) for name, scores in result["previous_token_by_segment"][0].items()}
    assert parts == {"first copy": 0.99, "second copy": 0.83, "rest": 0.81}  # "0.99 ..., 0.83 ..., 0.81 ..."


def test_3_four_induction_heads_match_at_every_offset_and_copy(model, result):
    assert result["induction_heads"] == [0, 1, 2, 3]
    assert prefix_matching_by_offset(model, half_len=8, num_sequences=256, seed=14).max(axis=1).min() > 0.5
    assert result["copying"][1].min() > 0.95  # "near 1"
    assert result["copying"][0][0] < -0.9  # the previous-token head "near -1"


def test_3_the_qk_diagonal_wins_for_every_token_and_the_induction_heads_split_the_vocabulary(model, result):
    best = int(np.argmax(result["prefix_matching"][1]))
    ov, qk = ov_circuit(model, 1, best), qk_circuit(model, 1, best, key_through=(0, 0))
    assert copying_score(ov) > 0.95
    assert np.mean(qk.argmax(axis=1) == np.arange(32)) == 1.0  # "bright for every token"
    diagonals = np.array([np.diag(ov_circuit(model, 1, h)) for h in (0, 1, 2, 3)])  # (head, token)
    assert not np.any((diagonals > 0.91) & (diagonals < 1.07))  # "no diagonal entry ... between 0.91 and 1.07"
    strong = diagonals > 1
    assert 11 <= np.sum(strong[best]) <= 13  # the figure's head: "about a dozen"
    assert strong.sum(axis=1).min() == 12 and strong.sum(axis=1).max() == 14  # "each copies 12-14 tokens"
    assert strong.sum(axis=0).min() >= 1  # "every token has at least one head"
    summed = sum(ov_circuit(model, 1, h) for h in (0, 1, 2, 3))
    assert np.all(summed.argmax(axis=1) == np.arange(32))  # "each row's largest entry on the diagonal"


# --- section 4: composition on its scale, and the path ablation ---------------------------------


def test_4_chance_the_exact_reader_and_the_ceiling(model):
    mean, sd = composition_baseline(64, 16, draws=2000, seed=0)
    assert round(mean, 3) == 0.125 and sd == pytest.approx(0.007, abs=0.001)  # "0.125"
    _, _, W_v, W_o = head_weights(model, 0, 0)
    writes = W_v @ W_o
    projector = np.linalg.pinv(writes) @ writes  # reads exactly the 16 directions the head writes
    assert composition_score(writes, projector) == pytest.approx(0.25, abs=1e-9)  # "1 / sqrt(16) = 0.25"
    assert composition_ceiling(writes, projector) == pytest.approx(0.25, abs=1e-9)  # a projector reaches its ceiling
    ceilings = composition_ceilings(model, "K")[0, [0, 1, 2, 3]]
    assert 0.295 <= ceilings.min() and ceilings.max() < 0.31  # "the ceiling of these spectra (about 0.30)"


def test_4_k_composition_far_from_chance_and_three_quarters_of_the_ceiling_q_and_v_far_below_chance(model):
    mean, sd = composition_baseline(64, 16, draws=2000, seed=0)
    K, Q, V = (composition_scores(model, kind) for kind in "KQV")
    induction = [0, 1, 2, 3]
    k = K[0, induction]
    assert 0.215 <= k.min() and k.max() < 0.235  # "0.22-0.23"
    assert round((k.min() - mean) / sd) == 15 and round((k.max() - mean) / sd) == 16  # "15-16 standard deviations"
    share = k / composition_ceilings(model, "K")[0, induction]
    assert 0.7 < share.min() and share.max() < 0.8  # "about three quarters of the ceiling"
    q_and_v = np.concatenate([Q[0, induction], V[0, induction]])
    assert 0.015 <= q_and_v.min() < 0.025 and q_and_v.max() < 0.05  # "far below chance (0.02-0.05)"
    assert q_and_v.max() < mean - 10 * sd
    others = Q[1:, :]  # the other layer-0 heads
    z = (others - mean) / sd
    assert np.argwhere(z > 3).tolist() == [[2, 0]]  # one pair over three sd: head 3 with induction head 0
    assert round(Q[3, 0], 2) == 0.15 and round(z[2, 0], 1) == 3.5  # "0.15", "3.5 standard deviations"
    every = np.concatenate([K[1:].ravel(), Q[1:].ravel(), V[1:].ravel()])  # the 36 scores of heads 1-3
    assert np.mean(every <= mean) > 0.75  # "most ... at or below chance"
    assert np.mean((every >= 0.075) & (every < 0.115)) > 0.75  # "(0.08-0.11)"
    assert round(every.std(), 3) == 0.017 and round(sd, 3) == 0.007  # "0.017, not 0.007"
    assert every.max() == Q[3, 0]  # "the largest of them"


def test_4_the_key_path_ablation_by_each_method_against_the_whole_model(model, result, batch):
    """Baseline: the model with nothing cut (1.00). Resample is the method the prose relies on."""
    assert round(result["accuracy"], 2) == 1.0
    assert round(cut(model, batch, [0], "K", "resample"), 2) == 0.06
    assert round(cut(model, batch, [0], "K", "mean"), 2) == 0.05
    assert round(cut(model, batch, [0], "K", "zero"), 2) == 0.06


def test_4_the_other_paths_cost_nothing(model, batch):
    """Controls, each against the whole model's 1.00: head 3 in the queries; head 0 in the queries and values."""
    for method in ("resample", "mean", "zero"):
        assert round(cut(model, batch, [3], "Q", method), 2) == 1.0  # "costs nothing (1.00 by every method)"
        assert round(cut(model, batch, [0], "V", method), 2) == 1.0  # "into the values costs nothing either"
        assert round(cut(model, batch, [0], "Q", method), 2) == 1.0  # "into the queries"


def test_4_the_key_path_cut_breaks_the_copy_outside_the_training_layout_too(model):
    """On the prefix-matching probe (16 random tokens repeated once), resampling the key path breaks the copy."""
    rng = np.random.default_rng(5)
    first = rng.permuted(np.tile(np.arange(32), (512, 1)), axis=1)[:, :16]
    tokens = np.concatenate([first, first], axis=1)  # (512, 32)
    n, zero = np.full(512, 16), np.zeros(512, dtype=np.int64)
    whole = accuracy(model.forward(tokens)[0], tokens, n, zero, zero)
    assert whole > 0.95
    assert cut(model, (tokens, n, zero, zero), [0], "K", "resample") < whole - 0.4


# --- section 5: whole heads switched off (zero ablation of each head's W_o rows) ------------------


def test_5_one_previous_token_head_and_redundant_induction_heads(model, result, batch):
    tokens, n, offset, gap = batch

    def acc(ablate):
        return accuracy(model.forward(tokens, ablate=ablate)[0], tokens, n, offset, gap)

    whole = result["accuracy"]
    assert (round(acc([(0, 0)]), 2), round(acc([(0, None)]), 2)) == (0.05, 0.06)  # "0.05 and 0.06 left"
    assert min(acc([(0, h)]) for h in (1, 2, 3)) > 0.99  # the figure: the other layer-0 heads "nearly 1"
    costs = [whole - acc([(1, h)]) for h in (0, 1, 2, 3)]
    assert max(costs) < 0.095 and round(max(costs), 2) == 0.09  # "each alone costs at most 0.09"
    assert costs[0] < 0.01 and costs[3] < 0.01  # "heads 0 and 3 almost nothing"
    assert 0.85 < min(acc([(1, 1)]), acc([(1, 2)])) and max(acc([(1, 1)]), acc([(1, 2)])) < 0.95  # "about 0.9"
    together = acc([(1, h) for h in (0, 1, 2, 3)])
    assert round(together, 2) == 0.03 and abs(together - CHANCE) < 0.005  # "0.03, chance"
    assert acc([(1, None)]) == together  # all of layer 1 is the four induction heads


def test_5_without_head_1_the_tokens_only_it_copies_are_right_less_than_half_the_time(model, batch):
    """Per token, written as loops: which heads raise a token's own logit by more than 1."""
    tokens, n, offset, gap = batch
    E, U = model.embed, model.unembed
    layer = model.layers[1]
    d, d_k = layer.d_model, layer.d_k
    strong = np.zeros((4, 32), dtype=bool)
    for h in range(4):
        W_v = layer.W_qkv[:, 2 * d + h * d_k : 2 * d + (h + 1) * d_k]
        W_o = layer.W_o[h * d_k : (h + 1) * d_k]
        strong[h] = np.array([E[i] @ W_v @ W_o @ U[:, i] for i in range(32)]) > 1
    only_head_1 = strong[1] & (strong.sum(axis=0) == 1)
    predicted = model.forward(tokens, ablate=[(1, 1)])[0].argmax(axis=-1)
    own, other = [], []
    for b in range(len(tokens)):
        start = offset[b] + n[b] + gap[b]
        for t in range(start, start + n[b] - 1):  # the second copy, but its last position
            (own if only_head_1[tokens[b, t + 1]] else other).append(predicted[b, t] == tokens[b, t + 1])
    assert round(np.mean(own), 2) == 0.43 and round(np.mean(other), 2) == 0.92  # the notebook's two lines
    assert np.mean(own) < 0.5 and np.mean(other) > 0.9  # "less than half the time"; "hardly notice"


# --- section 6: circuit or shortcut --------------------------------------------------------------


def test_6_with_no_gap_the_shortcut_falls_as_the_repeat_moves_and_the_trained_model_does_not(model, shortcut):
    short = offset_accuracy(shortcut, [4, 8, 12], per_cell=256, seed=11)  # gap 0, as the figure says
    trained = offset_accuracy(model, [4, 8, 12], per_cell=256, seed=11)
    assert short[:, 0].min() > 0.95
    assert np.nanmin(short[:2], axis=1).max() < 0.1  # n = 4 and 8 "near 0"
    assert round(np.nanmin(short[2]), 2) == 0.49  # n = 12 "to 0.49"
    assert round(np.nanmin(trained), 2) == 0.93  # "at least 0.93 everywhere"
    assert np.unravel_index(np.nanargmin(trained), trained.shape) == (0, 0)  # "its lowest": blocks of 4, offset 0
    four, eight = short[0], short[1]  # the alt text's lines
    assert four[8] < 0.1 and 0.45 < four[12] < 0.55 and four[15:].max() < 0.15  # "near 0 by 8", "0.5 at 12", "from 15"
    assert eight[11] < 0.1 and eight[:5].min() > 0.85  # "near 0 by offset 11"


def test_6_with_the_first_copy_in_place_the_gap_alone_decides(shortcut):
    """Independent cells of 512 sequences each, not the notebook's grid."""
    assert abs(cell(shortcut, 4, 5, 0) - 0.25) < 0.03 and cell(shortcut, 4, 5, 5) > 0.99  # "a quarter", "all"
    assert abs(cell(shortcut, 6, 9, 0) - 0.25) < 0.03 and 0.9 < cell(shortcut, 6, 9, 8) < 0.95  # "0.25", "0.92"
    assert cell(shortcut, 6, 9, 9) > 0.995  # "1.00 with a gap of 9"


@pytest.fixture(scope="module")
def grids(model, shortcut):
    return {name: offset_gap_accuracy(m, 4, per_cell=32, seed=11) for name, m in
            (("shortcut", shortcut), ("trained", model))}


def test_6_the_shortcut_copies_inside_its_two_rules_and_fails_outside_the_trained_model_everywhere(grids):
    o, g = np.meshgrid(np.arange(25), np.arange(25), indexing="ij")
    rules = (o <= 12) & (g >= o) & (g <= 12)
    short = grids["shortcut"]
    assert np.nanmin(short[rules]) >= 0.96  # inside both rules "0.96 or more in every cell"
    assert 0.28 < np.nanmean(short[~rules]) < 0.4  # outside "mostly fails (about a third on average)"
    assert np.nanmean(short[(o > 12) & ~np.isnan(short)]) < 0.15  # the first copy past 15: layer 0's rule
    assert np.nanmean(short[(o <= 12) & (g <= o - 4)]) < 0.35  # gap well below the offset: layer 1's rule
    assert np.nanmean(short[(o <= 8) & (g >= 16)]) < 0.3  # copies further apart than training put them
    assert round(np.nanmin(grids["trained"]), 2) == 0.89  # "at least 0.89 in every cell"
    # the alt text: above the dotted line about 0.1, past gap 13 about 0.2, left of the diagonal fading
    assert round(np.nanmean(short[o > 12]), 1) == 0.1 and round(np.nanmean(short[(o <= 12) & (g >= 15)]), 1) == 0.2
    assert round(np.nanmean(short[(o <= 12) & (g < o) & (g >= o - 3)]), 1) == 0.8
    assert round(np.nanmean(short[(o <= 12) & (g <= o - 8)]), 1) == 0.2


def test_6_both_previous_token_heads_are_position_tables_of_different_reach(model, shortcut):
    short = previous_token_profile(shortcut, num_sequences=1024, seed=13, at_start=True)
    trained = previous_token_profile(model, num_sequences=1024, seed=13)
    for profile, reach in ((short, 15), (trained, 27)):
        best = profile[int(np.nanargmax(np.nanmean(profile, axis=1)))]
        assert np.flatnonzero(best >= 0.5).min() == 1 and np.flatnonzero(best >= 0.5).max() == reach  # "1-15", "1-27"
    best_short = short[int(np.nanargmax(np.nanmean(short, axis=1)))]
    assert best_short[16:].max() < 0.1  # near 0 after the band
    best_trained = trained[0]
    assert best_trained[1:28].min() > 0.9 and best_trained[28:].max() < 0.1  # "above 0.9 from 1 to 27", "near 0"


def test_6_the_latest_first_copy_ends_at_27():
    """The reach the prose explains: no layout of the training task puts an earlier copy past position 27."""
    _, n, offset, _ = induction_batch(np.random.default_rng(0), 20000, edge_share=0.1)
    assert (offset + n - 1).max() == 27 == 32 - 4 - 1  # the shortest block, 4 tokens, its copy ending the context


def test_6_the_shortcut_was_trained_for_1500_steps():
    with resources.as_file(resources.files("mhattn") / "data" / "induction_at_start.npz") as path, np.load(path) as f:
        assert int(f["steps"]) == 1500


def test_6_without_positions_the_previous_token_head_is_gone(model, result, batch):
    assert result["accuracy_without_positions"] < 0.15
    scores = previous_token_score(model.forward(batch[0], use_positions=False)[1][0])
    assert scores.max() < 0.11  # "no more than even weights give (0.10)"


# --- section 7: the circuit at work --------------------------------------------------------------


def test_7_the_model_continues_a_b_c_d_e_a_b_and_hedges(model):
    prompt = encode_letters("a b c d e a b")
    late = encode_letters("q w e r t y u i o p l k j h g f a b c d e a b")
    assert decode_tokens(generate(model, prompt, 3)) == "c d e" == decode_tokens(generate(model, late, 3))
    logits = model.forward(prompt)[0][-1]
    assert 0.4 < softmax(logits)[2] < 0.6  # "about half"
    assert softmax(logits / 0.5)[2] > 0.9
    assert decode_tokens(generate(model, prompt, 3, temperature=1.0, seed=0)) != "c d e"  # wanders
    for seed in (0, 1):
        assert decode_tokens(generate(model, prompt, 3, temperature=0.5, seed=seed)) == "c d e"


def test_7_in_training_a_repeated_token_is_followed_by_the_earlier_successor_about_half_the_time():
    tokens = induction_batch(np.random.default_rng(0), 4000, edge_share=EDGE_SHARE)[0]  # as training drew them
    right = []
    for row in tokens:
        for t in range(31):
            earlier = np.flatnonzero(row[:t] == row[t])
            if len(earlier):
                right.append(row[t + 1] == row[earlier[-1] + 1])
    assert round(np.mean(right), 2) == 0.49  # "only about half of the time (0.49)"


# --- exercises -----------------------------------------------------------------------------------


def test_exercise_1_each_induction_head_alone_keeps_about_half(model, result, batch):
    tokens, n, offset, gap = batch
    alone = [accuracy(model.forward(tokens, ablate=[(1, h) for h in result["induction_heads"] if h != kept])[0],
                      tokens, n, offset, gap) for kept in result["induction_heads"]]
    assert (round(min(alone), 2), round(max(alone), 2)) == (0.47, 0.59)  # "between 0.47 and 0.59"


def test_exercise_1_in_the_shortcut_one_head_suffices_and_the_choice_matters(shortcut):
    tokens, n, *_ = induction_batch(np.random.default_rng(2024), 512, at_start=True)
    alone = [accuracy(shortcut.forward(tokens, ablate=[(1, h) for h in range(4) if h != kept])[0], tokens, n)
             for kept in range(4)]
    assert round(alone[0], 2) == 0.98 and 0.25 < alone[2] < 0.45  # "nearly all (0.98)", "about a third"


def test_exercise_2_the_other_heads_in_the_keys_cost_nothing_by_any_method(model, result, batch):
    for method in ("resample", "mean", "zero"):  # "1.00 ..., as much as the whole model"
        assert round(cut(model, batch, [1, 2, 3], "K", method), 2) == 1.0
        assert abs(cut(model, batch, [1, 2, 3], "K", method) - measure_accuracy(model, batch)) < 0.005
    assert np.all(np.abs(result["previous_token"][0][1:] - 0.1) < 0.025)  # "near 0.1, what even weights give"
    mean, _ = composition_baseline(64, 16, draws=2000, seed=0)
    assert composition_scores(model, "K")[1:].max() < mean  # "all below chance"
