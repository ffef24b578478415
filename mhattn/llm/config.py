"""The sizes of a Llama model: what the file says and what the forward pass reads."""

from ..checks import checked
from ..checks.llm_model import config_init_args


class LlamaConfig:
    """The hyper-parameters of a Llama-architecture decoder (Touvron et al. 2023).

    Parameters
    ----------
    vocab, d_model, num_layers, num_heads, num_kv_heads, d_ff : int
        Tokens, the width of the residual stream, blocks, query heads, key/value heads (they
        must divide ``num_heads``; ``d_k = d_model // num_heads``) and the hidden width of the
        SwiGLU feed-forward network.
    rope_base : float > 0, keyword only, default 10000.0
        RoPE's base (``rope_theta`` in Hugging Face's configs, ``rope.freq_base`` in a GGUF file).
    rope : ``"interleaved"`` or ``"half"``, keyword only, default ``"interleaved"``
        Which query/key coordinates turn together (:class:`mhattn.RotaryMultiHeadAttention`).
        llama.cpp's converter reorders the rows of ``W_q`` and ``W_k`` so that its files need
        ``"interleaved"``; Hugging Face's checkpoints need ``"half"``.
    rms_eps : float > 0, keyword only, default 1e-5
        Added to the mean square in every RMSNorm.

    Examples
    --------
    >>> config = LlamaConfig(259, 64, 2, 4, 2, 128)
    >>> config
    LlamaConfig(vocab=259, d_model=64, num_layers=2, num_heads=4, num_kv_heads=2, d_ff=128,
                rope_base=10000, rope='interleaved', rms_eps=1e-05)
    >>> config.d_k
    16
    """

    @checked(config_init_args)
    def __init__(self, vocab, d_model, num_layers, num_heads, num_kv_heads, d_ff, *, rope_base=10000.0,
                 rope="interleaved", rms_eps=1e-5):
        self.vocab, self.d_model, self.num_layers = vocab, d_model, num_layers
        self.num_heads, self.num_kv_heads, self.d_ff = num_heads, num_kv_heads, d_ff
        self.rope_base, self.rope, self.rms_eps = rope_base, rope, rms_eps

    @property
    def d_k(self):
        """The width of one head: ``d_model // num_heads``."""
        return self.d_model // self.num_heads

    def _fields(self):
        return {"vocab": self.vocab, "d_model": self.d_model, "num_layers": self.num_layers,
                "num_heads": self.num_heads, "num_kv_heads": self.num_kv_heads, "d_ff": self.d_ff,
                "rope_base": self.rope_base, "rope": self.rope, "rms_eps": self.rms_eps}

    def __eq__(self, other):
        return isinstance(other, LlamaConfig) and self._fields() == other._fields()

    def __hash__(self):
        return hash(tuple(self._fields().values()))

    def __repr__(self):
        shown = {name: (f"{value:g}" if isinstance(value, float) else repr(value))
                 for name, value in self._fields().items()}
        return "LlamaConfig(" + ", ".join(f"{name}={value}" for name, value in shown.items()) + ")"

    def __str__(self):
        rows = [("blocks", self.num_layers), ("d_model", self.d_model),
                ("query heads", f"{self.num_heads} of d_k = {self.d_k}"),
                ("key/value heads", f"{self.num_kv_heads} (each serves {self.num_heads // self.num_kv_heads} "
                                    "query heads)"),
                ("feed-forward", f"SwiGLU, d_ff = {self.d_ff}"),
                ("RoPE", f"base {self.rope_base:g}, {self.rope} pairs"),
                ("RMSNorm eps", f"{self.rms_eps:g}"), ("vocabulary", f"{self.vocab} tokens, tied unembedding")]
        return "\n".join(f"{name:<16} {value}" for name, value in rows)
