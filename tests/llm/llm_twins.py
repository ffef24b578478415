"""The oracle of the model tests: Hugging Face's ``LlamaForCausalLM`` holding the same weights.

Transformers is a test dependency (``pip install -e ".[test]"``): without it these tests are
skipped, except under ``CI=true``, where that is a failure. Its Llama pairs RoPE coordinates
``i`` and ``i + d_k / 2`` (``rotate_half``); a GGUF file stores ``W_q`` and ``W_k`` with the rows
of every head reordered for the interleaved pairing, as llama.cpp's converter writes them:
:func:`to_half_split` undoes that, :func:`to_interleaved` does it.
"""

import os

import numpy as np
import pytest


def require(module):
    """Import ``module`` for a test; without it, skip, except under CI=true, where it fails."""
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is not installed, but CI=true: CI must compare the model with transformers")
        pytest.skip(f"{module} is not installed: comparison with transformers skipped")


def to_interleaved(W, num_heads):
    """Rows ``(i, i + d_k / 2)`` of each head of ``W`` (``(num_heads * d_k, in)``) moved to ``(2i, 2i + 1)``."""
    d_k = W.shape[0] // num_heads
    return W.reshape(num_heads, 2, d_k // 2, -1).swapaxes(1, 2).reshape(W.shape)


def to_half_split(W, num_heads):
    """The inverse of :func:`to_interleaved`."""
    d_k = W.shape[0] // num_heads
    return W.reshape(num_heads, d_k // 2, 2, -1).swapaxes(1, 2).reshape(W.shape)


def hf_state(weights, config):
    """Hugging Face's ``LlamaForCausalLM`` state dict (NumPy) from weights by their GGUF names."""
    unpermute = (lambda W, heads: to_half_split(W, heads)) if config.rope == "interleaved" else (lambda W, _: W)
    state = {"model.embed_tokens.weight": weights["token_embd.weight"],
             "model.norm.weight": weights["output_norm.weight"], "lm_head.weight": weights["token_embd.weight"]}
    for i in range(config.num_layers):
        b, h = f"blk.{i}.", f"model.layers.{i}."
        state |= {h + "input_layernorm.weight": weights[b + "attn_norm.weight"],
                  h + "self_attn.q_proj.weight": unpermute(weights[b + "attn_q.weight"], config.num_heads),
                  h + "self_attn.k_proj.weight": unpermute(weights[b + "attn_k.weight"], config.num_kv_heads),
                  h + "self_attn.v_proj.weight": weights[b + "attn_v.weight"],
                  h + "self_attn.o_proj.weight": weights[b + "attn_output.weight"],
                  h + "post_attention_layernorm.weight": weights[b + "ffn_norm.weight"],
                  h + "mlp.gate_proj.weight": weights[b + "ffn_gate.weight"],
                  h + "mlp.up_proj.weight": weights[b + "ffn_up.weight"],
                  h + "mlp.down_proj.weight": weights[b + "ffn_down.weight"]}
    return state


def hf_twin(model):
    """A ``LlamaForCausalLM`` (eager attention, the model's dtype) with ``model``'s weights and sizes."""
    torch, transformers = require("torch"), require("transformers")
    c = model.config
    dtype = torch.float64 if model.embed.dtype == np.float64 else torch.float32
    hf_config = transformers.LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.num_layers,
        num_attention_heads=c.num_heads, num_key_value_heads=c.num_kv_heads, rms_norm_eps=c.rms_eps,
        rope_theta=c.rope_base, max_position_embeddings=512, tie_word_embeddings=True, attention_bias=False,
        mlp_bias=False, hidden_act="silu", bos_token_id=1, eos_token_id=2, pad_token_id=2)
    twin = transformers.LlamaForCausalLM(hf_config).to(dtype)
    twin.config._attn_implementation = "eager"
    state = {name: torch.from_numpy(np.ascontiguousarray(value))
             for name, value in hf_state(model.weights(), c).items()}
    missing, unexpected = twin.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    return twin.eval()


U32 = 2.0**-24  #: float32's unit roundoff


def stream_error(config, seq):
    r"""The relative rounding error of the residual stream after every block, in float32 (typical size).

    A dot product of ``n`` terms is off by at most ``n u sum|a_i b_i|`` (Higham 2002, sec. 3.1);
    its rounding errors, of either sign, typically add up to ``sqrt(n) u sum|a_i b_i|`` (Higham and
    Mary 2019), the size used here. On its way through one block the stream goes through products
    of length ``d_model`` twice in series on the attention side (a projection, then ``W_o``), a
    weighted sum over at most ``seq`` values, and ``d_model`` then ``d_ff`` on the feed-forward
    side. Each block reads its input through an RMSNorm, which rescales it to unit RMS: an error
    small relative to the stream stays small relative to it, so the blocks' errors add up
    (``num_layers`` of them) rather than multiply.
    """
    d, f = config.d_model, config.d_ff
    return U32 * config.num_layers * (2 * np.sqrt(d) + np.sqrt(seq) + np.sqrt(d) + np.sqrt(f))


def magnitudes(model, ids):
    """``(S, M)`` along the model's own forward pass: the largest ``|score|`` of any head, and the largest
    ``sum_d |x_d E_vd|`` of the unembedding (``x`` the final normalised stream)."""
    from mhattn import causal_mask
    from mhattn.llm.norm import rms_norm

    eps, h, largest = model.config.rms_eps, model.embed[ids], 0.0
    group = model.config.num_heads // model.config.num_kv_heads
    for block in model.blocks:
        Q, K, _ = block.attention.project(rms_norm(h, block.attn_norm, eps))  # (batch, heads, seq, d_k)
        scores = Q @ np.repeat(K, group, axis=1).swapaxes(-1, -2) / np.sqrt(model.config.d_k)
        largest = max(largest, float(np.abs(scores).max()))
        h, _ = block(h, causal_mask(ids.shape[-1]))
    x = rms_norm(h, model.output_norm, eps)  # (batch, seq, d_model)
    return largest, float((np.abs(x) @ np.abs(model.embed).T).max())


def tolerances(model, ids):
    r"""``(logits, weights)``: how far two float32 computations of the model may differ, derived.

    With ``eps`` = :func:`stream_error`, each computation's logits are off by at most
    ``(eps + sqrt(d_model) u) M`` (the stream's error, then one more product of length ``d_model``
    with the tied embedding; ``M`` from :func:`magnitudes`), and each score by ``2 eps S`` (a query
    and a key, each off by ``eps``), which moves a softmax weight by at most half as much
    (``|d w_i / d s_j| <= 1/4``, summed over a row ``<= 1/2``). Two computations differ by at
    most twice each bound.
    """
    eps = stream_error(model.config, ids.shape[-1])
    S, M = magnitudes(model, ids)
    return 2 * (eps + np.sqrt(model.config.d_model) * U32) * M, 2 * eps * S
