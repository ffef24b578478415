"""The explorer's words (mhattn.explorer.text): the readout names the model's own layer count."""

import html
import re

import pytest

from mhattn.explorer.frame import State, compute_frame
from mhattn.explorer.text import readout_html
from mhattn.learn.model import InductionModel
from mhattn.learn.shipped import load_trained


@pytest.mark.parametrize(("num_layers", "layer"), [(1, 0), (3, 2), (3, 0)])
def test_the_trained_readout_counts_the_layers_of_the_model_shown(num_layers, layer):
    model = InductionModel(num_layers, vocab=8, max_len=8, d_model=16, num_heads=4)
    readout = html.unescape(readout_html(compute_frame(State(trained=True, layer=layer, tokens="a b c a"), model)))
    assert re.search(r"\blayer (\d+) of (\d+)\b", readout).groups() == (str(layer), str(num_layers))


def test_the_shipped_model_is_read_as_two_layers():
    readout = html.unescape(readout_html(compute_frame(State(trained=True, layer=1), load_trained())))
    assert "layer 1 of 2 ·" in readout
