"""What a trained head does, measured the way the interpretability literature measures it: one name for all.

The measures live by idea, each module with its definitions and references:

- :mod:`.attention_patterns`: the previous-token and prefix-matching scores, and their profiles;
- :mod:`.weight_circuits`: the QK and OV circuits, the copying score, composition scores;
- :mod:`.in_context`: the loss of each token, the in-context learning score, the induction loss;
- :mod:`.path_ablation`: what layer 1's queries, keys or values read from layer 0, cut;
- :mod:`.experiments`: the key-path ablation, accuracy wherever the repeat sits, and
  :func:`measure` and :func:`claims`, everything at once.

This module gathers their names, so that ``from mhattn.learn.circuits import measure`` finds them.
"""

from .attention_patterns import (
    offset_repeats,
    prefix_matching_by_offset,
    prefix_matching_score,
    previous_token_profile,
    previous_token_score,
    repeated_random_tokens,
    segments,
)
from .experiments import (
    INDUCTION_HEAD,
    PREVIOUS_TOKEN_HEAD,
    claims,
    forward_without_key_path,
    gap_accuracy,
    measure,
    offset_accuracy,
    offset_gap_accuracy,
)
from .in_context import (
    icl_tokens,
    in_context_learning_score,
    induction_loss,
    loss_report,
    mid_context_token,
    token_losses,
)
from .path_ablation import path_ablation
from .weight_circuits import (
    composition_baseline,
    composition_ceiling,
    composition_ceilings,
    composition_score,
    composition_scores,
    copying_score,
    head_weights,
    k_composition_scores,
    ov_circuit,
    qk_circuit,
)

__all__ = [
    "INDUCTION_HEAD", "PREVIOUS_TOKEN_HEAD", "claims", "composition_baseline", "composition_ceiling",
    "composition_ceilings", "composition_score",
    "composition_scores", "copying_score", "forward_without_key_path", "gap_accuracy", "head_weights",
    "icl_tokens", "in_context_learning_score", "induction_loss", "k_composition_scores", "loss_report", "measure",
    "mid_context_token", "offset_accuracy", "offset_gap_accuracy", "offset_repeats", "ov_circuit",
    "path_ablation", "prefix_matching_by_offset",
    "prefix_matching_score", "previous_token_profile", "previous_token_score", "qk_circuit",
    "repeated_random_tokens", "segments", "token_losses",
]
