"""The Llama model in NumPy equals Hugging Face's ``LlamaForCausalLM`` holding the same weights.

A tiny model with random weights (no download): logits, every block's attention weights,
greedy generation, the KV cache, the two RoPE pairings, and head ablation.
"""

import re

import numpy as np
import pytest
from llm_twins import hf_twin, require, to_interleaved, tolerances

from mhattn.llm import LlamaConfig, LlamaModel, tiny_llama
from mhattn.llm.tiny import random_weights

IDS = np.random.default_rng(0).integers(3, 259, (2, 24))  # (batch, seq): ordinary tokens of the tiny vocabulary


def theirs(twin, ids):
    """Logits ``(batch, seq, vocab)`` and weights ``(batch, layers, heads, seq, seq)`` of the transformers twin."""
    torch = require("torch")
    with torch.no_grad():
        out = twin(torch.from_numpy(ids), output_attentions=True)
    return out.logits.numpy(), np.stack([a.numpy() for a in out.attentions], axis=1)


@pytest.mark.parametrize("rope", ["interleaved", "half"])
def test_logits_and_every_attention_weight_equal_transformers_llama_within_the_derived_tolerance(rope):
    model = tiny_llama(seed=1, rope=rope)
    logits, weights = model(IDS, need_weights=True)
    their_logits, their_weights = theirs(hf_twin(model), IDS)
    logit_tol, weight_tol = tolerances(model, IDS)
    assert np.abs(logits - their_logits).max() <= logit_tol
    assert np.abs(weights - their_weights).max() <= weight_tol
    assert weights.shape == their_weights.shape == (2, 2, 4, 24, 24)


def test_the_wrong_pairing_runs_but_disagrees_with_transformers_far_beyond_the_tolerance():
    """The file's rows are ordered for interleaved pairs; read with half-split pairs, the model computes otherwise."""
    model = tiny_llama(seed=1)  # interleaved: as a GGUF file stores W_q and W_k
    twin = hf_twin(model)  # the same model, rows reordered for transformers' half-split pairs
    wrong = LlamaModel(LlamaConfig(259, 64, 2, 4, 2, 128, rope="half"), model.weights())
    logit_tol, weight_tol = tolerances(model, IDS)
    their_logits, their_weights = theirs(twin, IDS)
    logits, weights = wrong(IDS, need_weights=True)
    assert np.abs(logits - their_logits).max() > 100 * logit_tol
    assert np.abs(weights - their_weights).max() > 100 * weight_tol


def test_greedy_generation_writes_the_tokens_transformers_writes():
    torch = require("torch")
    model = tiny_llama(seed=2)
    twin = hf_twin(model)
    prompt = IDS[0, :6]
    with torch.no_grad():
        theirs_written = twin.generate(torch.from_numpy(prompt[None]), max_new_tokens=12, do_sample=False,
                                       eos_token_id=None, pad_token_id=2)[0, len(prompt):].numpy()
    np.testing.assert_array_equal(model.generate(prompt, 12), theirs_written)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_decoding_with_the_kv_cache_writes_what_recomputing_the_whole_text_writes(temperature):
    model = tiny_llama(seed=3, dtype=np.float64)
    prompt = IDS[1, :5]
    cached = model.generate(prompt, 10, temperature=temperature, seed=7)
    np.testing.assert_array_equal(cached, model.generate(prompt, 10, temperature=temperature, seed=7,
                                                         use_cache=False))
    assert cached.shape == (10,) and cached.dtype == np.int64


def test_sampling_is_seeded_and_zero_tokens_is_an_empty_array():
    model = tiny_llama(seed=3)
    prompt = IDS[1, :5]
    first = model.generate(prompt, 8, temperature=1.5, seed=1)
    np.testing.assert_array_equal(first, model.generate(prompt, 8, temperature=1.5, seed=1))
    assert not np.array_equal(first, model.generate(prompt, 8, temperature=1.5, seed=2))
    assert model.generate(prompt, 0).shape == (0,)


def test_one_sequence_gives_the_batch_result_without_its_batch_axis():
    model = tiny_llama(seed=0)
    logits, weights = model(IDS[0], need_weights=True)
    batch_logits, batch_weights = model(IDS[:1], need_weights=True)
    np.testing.assert_array_equal(logits, batch_logits[0])
    np.testing.assert_array_equal(weights, batch_weights[0])
    assert model(IDS)[1] is None  # need_weights=False


def test_ablating_a_head_removes_exactly_its_share_of_the_layer_output():
    """The layer output is the sum over heads of weights_h @ V_h @ W_o[rows of h]: one term goes, the rest stay."""
    model = tiny_llama(seed=4, dtype=np.float64)
    layer, head, d_k = 1, 2, model.config.d_k
    ids = IDS[:1, :10]
    logits, weights = model(ids, need_weights=True)
    ablated_logits, ablated_weights = model(ids, need_weights=True, ablate=[(layer, head)])
    np.testing.assert_array_equal(weights, ablated_weights)  # the last block: every pattern is unchanged
    assert np.abs(logits - ablated_logits).max() > 1e-3
    # the head's own term, rebuilt by hand from the block's input
    from mhattn.llm.block import silence
    from mhattn.llm.norm import rms_norm
    h = model.embed[ids]
    mask = np.tril(np.ones((10, 10), dtype=bool))
    h, _ = model.blocks[0](h, mask)
    block = model.blocks[layer]
    x = rms_norm(h, block.attn_norm, model.config.rms_eps)
    attention = block.attention
    _, _, V = attention.project(x)  # (1, kv_heads, seq, d_k)
    term = weights[:, layer, head] @ V[:, head // 2] @ attention.W_o[head * d_k : (head + 1) * d_k]
    full, _ = attention(x, mask)
    without, _ = silence(attention, [head])(x, mask)
    np.testing.assert_allclose(full - without, term, atol=1e-12)


def test_ablating_an_early_head_keeps_the_patterns_before_it_and_changes_those_after():
    model = tiny_llama(seed=4, dtype=np.float64)
    _, weights = model(IDS[:1], need_weights=True)
    _, ablated = model(IDS[:1], need_weights=True, ablate=[(0, None)])
    np.testing.assert_array_equal(weights[:, 0], ablated[:, 0])
    assert np.abs(weights[:, 1] - ablated[:, 1]).max() > 1e-6


def test_weights_round_trip_and_the_model_shares_rather_than_copies_its_large_arrays():
    config = LlamaConfig(259, 64, 2, 4, 2, 128)
    weights = random_weights(config, seed=5)
    model = LlamaModel(config, weights)
    for name, value in model.weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    assert np.shares_memory(model.embed, weights["token_embd.weight"])
    assert np.shares_memory(model.blocks[0].W_down, weights["blk.0.ffn_down.weight"])


def test_the_config_prints_every_size_and_equals_its_twin():
    config = tiny_llama(seed=0).config
    assert config == LlamaConfig(259, 64, 2, 4, 2, 128) != LlamaConfig(259, 64, 2, 4, 2, 128, rope="half")
    text = str(config)
    for piece in ("blocks           2", "4 of d_k = 16", "2 (each serves 2", "base 10000, interleaved"):
        assert piece in text


def test_tiny_tokenizer_round_trips_any_text_byte_by_byte():
    require("tokenizers")
    model = tiny_llama(seed=0)
    for text in ["", "a", "héllo wörld", "日本語 🤖", "<|im_start|>user\nhi<|im_end|>", "x = 12345;\t"]:
        assert model.detokenize(model.tokenize(text)) == text
    np.testing.assert_array_equal(model.tokenize("<|im_start|>a"), [1, 3 + ord("a")])


def test_the_interleaved_rows_are_the_half_split_rows_reordered():
    """The test's own reordering, checked on a hand-made matrix: row 2i of a head is row i, row 2i + 1 is i + d_k/2."""
    W = np.arange(8)[:, None] * np.ones((1, 3))  # two heads of d_k = 4
    np.testing.assert_array_equal(to_interleaved(W, 2)[:, 0], [0, 2, 1, 3, 4, 6, 5, 7])


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda m: m(np.array([5, 259])), ValueError, "ids must be integer token ids in [0, 259) of shape (seq,) or "
                                                   "(batch, seq); got ids from 5 to 259"),
    (lambda m: m(np.array([-1, 5])), ValueError, "got ids from -1 to 5"),
    (lambda m: m(np.zeros((1, 1, 3), int)), ValueError, "at least one token; got shape (1, 1, 3)"),
    (lambda m: m(np.zeros((1, 0), int)), ValueError, "at least one token; got shape (1, 0)"),
    (lambda m: m(np.array([5.0, 6.0])), TypeError, "got dtype float64"),
    (lambda m: m(np.array([5, 6]), ablate=[(2, 0)]), ValueError, "ablate: layer must be"),
    (lambda m: m(np.array([5, 6]), need_weights=1), TypeError, "need_weights must be True or False"),
    (lambda m: m.generate(np.array([[5, 6]]), 3), ValueError, "of shape (seq,), at least one token; got shape (1, 2)"),
    (lambda m: m.generate(np.array([5]), -1), ValueError, "num_tokens must be an int >= 0; got -1"),
    (lambda m: m.generate(np.array([5]), 2, temperature=-0.5), ValueError, "temperature must be a finite float >= 0"),
    (lambda m: m.tokenize(b"bytes"), TypeError, "string must be a str; got bytes"),
    (lambda m: m.detokenize(np.array([300])), ValueError, "got ids from 300 to 300"),
])
def test_bad_calls_are_refused_with_a_message_naming_the_argument(call, error, message):

    with pytest.raises(error, match=re.escape(message)):
        call(tiny_llama(seed=0))


def test_weights_that_do_not_fit_the_config_are_refused_by_name():
    config = LlamaConfig(259, 64, 2, 4, 2, 128)
    weights = random_weights(config)
    with pytest.raises(ValueError, match=r"weights\['blk.1.attn_k.weight'\] must have shape \(32, 64\)"):
        LlamaModel(config, weights | {"blk.1.attn_k.weight": np.zeros((64, 64), np.float32)})
    with pytest.raises(ValueError, match=r"missing \['blk.0.ffn_up.weight'\], not used \['output.weight'\]"):
        LlamaModel(config, {k: v for k, v in weights.items() if k != "blk.0.ffn_up.weight"}
                   | {"output.weight": weights["token_embd.weight"]})
    bad = weights["blk.0.attn_norm.weight"].copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"weights\['blk.0.attn_norm.weight'\] must be finite"):
        LlamaModel(config, weights | {"blk.0.attn_norm.weight": bad})
    with pytest.raises(TypeError, match="must all have one dtype"):
        LlamaModel(config, weights | {"output_norm.weight": weights["output_norm.weight"].astype(np.float64)})
    with pytest.raises(ValueError, match="this model has no tokenizer"):
        LlamaModel(config, weights).tokenize("a")
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads = 4"):
        LlamaConfig(259, 64, 2, 4, 3, 128)
