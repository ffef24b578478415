"""Byte-level byte-pair encoding (Sennrich et al. 2016; GPT-2's bytes), built with Hugging Face's ``tokenizers``.

A tokenizer is a vocabulary (``tokens[i]`` is id ``i``, spelled with one printable character
per byte, as GPT-2 does), the merges learned in training (pairs of tokens, in order), and the
special tokens (``<|im_start|>``) that are matched whole in a text. SmolLM2's file also splits
digits one by one before merging, as its tokenizer was trained. The ``tokenizers`` library (the
``chapter`` extra) is imported the first time a text is encoded or decoded.
"""

import numpy as np

from ..checks.optional import require


def byte_alphabet():
    """GPT-2's 256 characters, one per byte: printable bytes stand for themselves, the others are shifted past 255."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    spelling = {b: chr(b) for b in printable} | {b: chr(256 + n) for n, b in enumerate(others)}
    return [spelling[b] for b in range(256)]  # the character of byte 0, 1, ..., 255


class ByteLevelTokenizer:
    """Text to ids and back, from ``tokens``, ``merges`` (``"a b"`` strings) and the ids of ``special`` tokens."""

    def __init__(self, tokens, merges, special, *, split_digits=True):
        self.tokens, self.merges, self.special = list(tokens), list(merges), list(special)
        self.split_digits = split_digits
        self._backend = None

    def encode(self, string):
        """``(tokens,)`` int64 ids of ``string``."""
        return np.array(self.backend.encode(string).ids, dtype=np.int64)

    def decode(self, ids):
        """The text of ``ids``, special tokens written out."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=False)

    @property
    def backend(self):
        """The ``tokenizers.Tokenizer``, built on first use."""
        if self._backend is None:
            self._backend = _build(self)
        return self._backend

    def state(self):
        """What :class:`ByteLevelTokenizer` is built from, as JSON-ready values."""
        return {"tokens": self.tokens, "merges": self.merges, "special": self.special,
                "split_digits": self.split_digits}


def _build(spec):
    tokenizers = require("tokenizers")
    vocab = {token: i for i, token in enumerate(spec.tokens)}
    bpe = tokenizers.models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in spec.merges],
                                continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    backend = tokenizers.Tokenizer(bpe)
    byte_level = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2's split, then bytes
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Sequence(
        [tokenizers.pre_tokenizers.Digits(individual_digits=True), byte_level]) if spec.split_digits else byte_level
    backend.decoder = tokenizers.decoders.ByteLevel()
    backend.add_special_tokens([tokenizers.AddedToken(spec.tokens[i], normalized=False, special=True)
                                for i in spec.special])
    return backend
