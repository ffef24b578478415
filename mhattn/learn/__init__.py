"""The learning code: models that train with the teaching path's own backward pass.

- :mod:`.losses` (cross-entropy) and :mod:`.optim` (Adam);
- :mod:`.several_heads` -- notebook 07's experiment: what two heads learn that one cannot;
- :mod:`.task` -- the induction task: sequences with a repeated block, and where to score them;
- :mod:`.model` -- notebook 09's attention-only transformer and its checkpoints;
- :mod:`.train` and :mod:`.cli` -- its training loop and ``python -m mhattn.train``;
- :mod:`.circuits` -- what its heads do, measured as the interpretability literature does.

It uses the teaching path (:mod:`mhattn.core`), the engine and the checks; nothing in the
teaching path or the engine imports it.
"""
