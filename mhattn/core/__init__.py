"""The teaching path: the code the chapter's notebooks show, a few lines a function.

In the order the chapter builds it:

1. :mod:`.softmax` -- a numerically stable softmax (notebook 01);
2. :mod:`.attention` -- scaled dot-product attention, with masks (02), and :mod:`.masks` --
   causal and padding masks (True = may attend);
3. :mod:`.heads` -- splitting ``d_model`` into heads and back (03);
4. :mod:`.projection` and :mod:`.multihead` -- the fused ``W_qkv`` projection and the whole
   module (04);
5. :mod:`.positions` -- sinusoidal positions and rotary embeddings (08);
6. :mod:`.grad` -- the backward pass, derived by hand (09).

This package imports only NumPy, itself and :mod:`mhattn.checks` (each public function's door
is one decorator line). It never imports the engine, the learning code, the pictures or the
explorer: they build on it.
"""
