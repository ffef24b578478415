r"""A Llama-architecture language model in NumPy, every attention layer the chapter's own.

.. code-block:: text

    h = embed[ids]                                   # (batch, seq, d_model): one row per token
    for each block: h = block(h)                     # attention, then SwiGLU, on the residual stream
    logits = rms_norm(h, output_norm) @ embed.T      # (batch, seq, vocab): the unembedding is tied

Notebook 10 runs SmolLM2-135M-Instruct this way (:func:`mhattn.llm.load_smollm2`); a tiny
model with random weights (:func:`mhattn.llm.tiny_llama`) has the same code and shapes.
"""

import numpy as np

from ..checks import checked
from ..checks.llm_model import (
    detokenize_args,
    llama_forward_args,
    llama_generate_args,
    llama_init_args,
    no_args,
    tokenize_args,
)
from ..core.masks import causal_mask
from .block import DecoderBlock
from .generate import generate
from .unembed import unembed


class LlamaModel:
    """A decoder of :class:`LlamaConfig`'s sizes with the given weights (and, optionally, a tokenizer).

    Parameters
    ----------
    config : LlamaConfig
    weights : dict of ndarray
        Float arrays by their GGUF names, in ``nn.Linear``'s ``(out, in)`` layout:
        ``token_embd.weight`` ``(vocab, d_model)``, ``output_norm.weight`` ``(d_model,)``, and for
        each block ``i`` ``blk.{i}.attn_norm.weight``, ``attn_q``, ``attn_k``, ``attn_v``,
        ``attn_output``, ``ffn_norm``, ``ffn_gate``, ``ffn_up``, ``ffn_down`` (all ``.weight``).
        All in one dtype, float32 or float64 (the model computes in it). The attention weights
        are copied into each :class:`mhattn.GroupedQueryAttention`; the others are shared, not copied.
    tokenizer : optional, keyword only
        What :meth:`tokenize` and :meth:`detokenize` use (:func:`load_smollm2` and
        :func:`tiny_llama` give one).

    Attributes
    ----------
    config : LlamaConfig
    embed : ndarray of shape ``(vocab, d_model)``
        The token embeddings, and (transposed) the unembedding.
    blocks : list of DecoderBlock
        ``blocks[i].attention`` is block ``i``'s :class:`mhattn.GroupedQueryAttention`.
    output_norm : ndarray of shape ``(d_model,)``

    Examples
    --------
    >>> from mhattn.llm import tiny_llama
    >>> model = tiny_llama(seed=0)
    >>> model
    LlamaModel(vocab=259, d_model=64, num_layers=2, num_heads=4, num_kv_heads=2, d_ff=128, rope='interleaved')
    >>> twin = LlamaModel(model.config, model.weights())  # the same sizes and weights
    >>> bool(np.array_equal(twin(np.array([5, 6, 7]))[0], model(np.array([5, 6, 7]))[0]))
    True
    """

    @checked(llama_init_args)
    def __init__(self, config, weights, *, tokenizer=None):
        self.config = config
        self.embed = weights["token_embd.weight"]  # (vocab, d_model)
        self.blocks = [DecoderBlock(config, weights, i) for i in range(config.num_layers)]
        self.output_norm = weights["output_norm.weight"]  # (d_model,)
        self.tokenizer = tokenizer

    @checked(llama_forward_args)
    def forward(self, ids, *, need_weights=False, ablate=()):
        """Next-token logits at every position, and every attention weight if asked.

        Parameters
        ----------
        ids : ndarray of int, shape ``(seq,)`` or ``(batch, seq)``
            Token ids in ``[0, vocab)``.
        need_weights : bool, keyword only, default False
            True also returns the attention weights of every block and head.
        ablate : iterable of ``(layer, head)``, keyword only
            Query heads whose output is zeroed (``head=None``: every head of that block); their
            weights are still returned.

        Returns
        -------
        logits : ndarray of shape ``(batch, seq, vocab)`` (or ``(seq, vocab)`` for 1-D ``ids``)
            ``logits[..., t, :]`` scores the candidates for token ``t + 1``.
        weights : ndarray of shape ``(batch, num_layers, num_heads, seq, seq)``, or None
            (``(num_layers, num_heads, seq, seq)`` for 1-D ``ids``.)

        Examples
        --------
        >>> from mhattn.llm import tiny_llama
        >>> model = tiny_llama(seed=0)
        >>> logits, weights = model.forward(np.array([[5, 6, 7, 8]]), need_weights=True)  # or model(...)
        >>> logits.shape, weights.shape  # (batch, seq, vocab), (batch, layers, heads, seq, seq)
        ((1, 4, 259), (1, 2, 4, 4, 4))
        >>> print(weights[0, 0, 0, 0])  # the first token can only see itself
        [1. 0. 0. 0.]
        """
        single = ids.ndim == 1
        ids = ids[None] if single else ids  # (batch, seq)
        h = self.embed[ids]  # (batch, seq, d_model)
        mask = causal_mask(ids.shape[1])  # (seq, seq): no token reads a later one
        silenced = _by_layer(ablate, self.config.num_heads)
        every = []
        for i, block in enumerate(self.blocks):
            h, weights = block(h, mask, need_weights=need_weights, silenced=silenced.get(i))
            every.append(weights)  # (batch, num_heads, seq, seq) or None
        logits = unembed(h, self.output_norm, self.embed, self.config.rms_eps)  # (batch, seq, vocab): tied
        weights = np.stack(every, axis=1) if need_weights else None  # (batch, num_layers, num_heads, seq, seq)
        if single:
            return logits[0], (None if weights is None else weights[0])
        return logits, weights

    __call__ = forward

    @checked(llama_generate_args)
    def generate(self, ids, num_tokens, *, temperature=0.0, seed=0, use_cache=True):
        """The ``num_tokens`` tokens the model writes after ``ids`` (``(prompt_len,)``), one at a time.

        ``temperature`` 0 takes the most likely token each time (greedy); above 0 samples from
        ``softmax(logits / temperature)`` with a generator seeded by ``seed``. With ``use_cache``
        every block keeps its keys and values in a :class:`mhattn.KVCache`, so each step runs
        only the new token; False runs the whole text again each step (the same tokens, slower).
        Returns an int array of shape ``(num_tokens,)``.

        Examples
        --------
        >>> from mhattn.llm import tiny_llama
        >>> model = tiny_llama(seed=0)
        >>> written = model.generate(np.array([5, 6, 7]), 4)
        >>> written.shape, bool(np.array_equal(written, model.generate(np.array([5, 6, 7]), 4, use_cache=False)))
        ((4,), True)
        """
        return generate(self, ids, num_tokens, temperature=temperature, seed=seed, use_cache=use_cache)

    @checked(tokenize_args, results_finite=False)
    def tokenize(self, string):
        """The token ids of ``string``: an int array of shape ``(tokens,)`` (no start token is added).

        Special tokens written in the text (``<|im_start|>``) become their own ids.

        Examples
        --------
        >>> from mhattn.llm import tiny_llama
        >>> model = tiny_llama(seed=0)  # its tokenizer has one token per byte
        >>> model.tokenize("héllo")
        array([107, 198, 172, 111, 111, 114])
        """
        return self.tokenizer.encode(string)

    @checked(detokenize_args, results_finite=False)
    def detokenize(self, ids):
        """The text of token ids ``ids`` (``(tokens,)``), special tokens included.

        Examples
        --------
        >>> from mhattn.llm import tiny_llama
        >>> model = tiny_llama(seed=0)
        >>> model.detokenize(model.tokenize("héllo"))
        'héllo'
        """
        return self.tokenizer.decode(ids)

    @checked(no_args, results_finite=False)
    def weights(self):
        """Every weight by its GGUF name, in ``(out, in)`` layout (the arrays the model holds, or copies).

        Examples
        --------
        >>> from mhattn.llm import tiny_llama
        >>> weights = tiny_llama(seed=0).weights()
        >>> len(weights), weights["blk.0.attn_k.weight"].shape  # 2 + 9 per block; (kv_width, d_model)
        (20, (32, 64))
        """
        found = {"token_embd.weight": self.embed, "output_norm.weight": self.output_norm}
        for i, block in enumerate(self.blocks):
            W_q, W_k, W_v, W_o = (W.T for W in _attention_weights(block.attention))
            parts = {"attn_norm": block.attn_norm, "attn_q": W_q, "attn_k": W_k, "attn_v": W_v, "attn_output": W_o,
                     "ffn_norm": block.ffn_norm, "ffn_gate": block.W_gate.T, "ffn_up": block.W_up.T,
                     "ffn_down": block.W_down.T}
            found |= {f"blk.{i}.{part}.weight": value for part, value in parts.items()}
        return found

    def __repr__(self):
        c = self.config
        return (f"LlamaModel(vocab={c.vocab}, d_model={c.d_model}, num_layers={c.num_layers}, "
                f"num_heads={c.num_heads}, num_kv_heads={c.num_kv_heads}, d_ff={c.d_ff}, rope={c.rope!r})")


def _attention_weights(attention):
    """``(W_q, W_k, W_v, W_o)`` of ``attention`` in ``y = x @ W`` layout, through its one column accessor."""
    columns = attention.qkv_columns()
    W_q, W_k, W_v = np.split(attention.weights(attention.W_o.dtype)[0], columns, axis=1)
    return W_q, W_k, W_v, attention.W_o


def _by_layer(ablate, num_heads):
    """Checked ``(layer, head or None)`` pairs as ``{layer: sorted heads}`` (``head=None``: every head)."""
    silenced = {}
    for layer, head in ablate:
        silenced.setdefault(layer, set()).update(range(num_heads) if head is None else (head,))
    return {layer: sorted(heads) for layer, heads in silenced.items()}
