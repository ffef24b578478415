"""The book's live explorer copies Python functions into JavaScript: a guard that needs no browser.

``book/_static/explorer-*.js`` and ``live-figures.js`` (the chapters' live figures) compute, in
the browser, what these functions of the package compute. The browser tests
(tests/test_book_explorer.py, tests/test_book_live_figures.py) check the two agree, but only
where Chromium runs. Here, with no browser:

- the source of each copied function is pinned by a hash: a change to one fails this test
  until the browser test has been run again and the hash updated (the JavaScript may need the
  same change);
- every Python name the JavaScript's comments cite (``mhattn.x.y``) must still exist, found
  by its dotted path (a function moved to another module fails here, by name).
"""

import hashlib
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(ROOT / "book" / "_static").glob("explorer-*.js"), ROOT / "book" / "_static" / "live-figures.js"])
CITED = re.compile(r"\bmhattn(?:\.[A-Za-z_]\w*)+")

#: dotted path of each function (or method) the JavaScript copies -> sha256 of its source, first 16 hex digits
COPIED = {
    "mhattn.explorer.frame.compute_frame": "bcb8a86d28aeb9a4",
    "mhattn.explorer.frame._untrained_frame": "083de1a585842090",
    "mhattn.explorer.frame._trained_frame": "fff86c9da3c1883f",
    "mhattn.explorer.frame.random_tokens": "29a0a0e3bda7fcd7",
    "mhattn.explorer.frame.parse_tokens": "acdae99a54ab3bf5",
    "mhattn.explorer.frame.head_choices": "b18399930ad431ac",
    "mhattn.explorer.frame.padded_length": "bc9b2490d035274b",
    "mhattn.learn.model.encode_letters": "cd23c9ad1d2f50be",
    "mhattn.MultiHeadAttention.__init__": "51d562ff1ca8f138",
    "mhattn.MultiHeadAttention.forward": "38594dedb58ec1b1",
    "mhattn.scaled_dot_product_attention": "41b74d7797c2494d",
    "mhattn.softmax": "9e08f82a6ddde1c1",
    "mhattn.core.positions.apply_rope": "58c2a1c14d746fca",
    "mhattn.pictures.embedding_shift.embedding_shift_2d": "0b4e1e5d7a4f4bbc",
    "mhattn.learn.circuits.previous_token_score": "e37698649cfe6c0b",
    "mhattn.learn.circuits.prefix_matching_score": "24519407c99458a6",
    "mhattn.causal_mask": "becc07404db940e5",
    "mhattn.padding_mask": "64c7858bfd5aa992",
    "mhattn.core.projection.project_qkv": "7d0649b331b79002",
    "mhattn.MultiHeadAttention.project": "1cd95ea7bd2c699c",
    "mhattn.learn.generate.generate": "f5e4f2aff5ed0ab3",
}
RERUN = "re-run the browser tests (tests/test_book_explorer.py, tests/test_book_live_figures.py), then update the hash"


def resolve(dotted):
    """The object at a dotted path: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                raise LookupError(f"{dotted}: {'.'.join(parts[:cut])} has no {name!r}")
            target = getattr(target, name)
        return target
    raise LookupError(f"{dotted}: no module {parts[0]!r}")


def source_hash(dotted):
    source = inspect.getsource(inspect.unwrap(resolve(dotted)))
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def cited_names(scripts=SCRIPTS):
    return sorted({name for path in scripts for name in CITED.findall(path.read_text(encoding="utf-8"))})


@pytest.mark.parametrize("dotted", list(COPIED))
def test_book_copied_function_is_unchanged(dotted):
    try:
        got = source_hash(dotted)
    except LookupError as error:
        pytest.fail(f"{error}: the JavaScript copies it; find where it went, {RERUN}")
    assert got == COPIED[dotted], f"{dotted} changed (hash {got}): {RERUN}"


def test_book_every_python_name_the_javascript_cites_exists():
    names = cited_names()
    assert len(names) >= 8, names
    missing = []
    for name in names:
        try:
            resolve(name)
        except LookupError as error:
            missing.append(str(error))
    assert missing == [], "names cited in book/_static/explorer-*.js that the package lacks:\n" + "\n".join(missing)


def test_book_every_cited_function_is_pinned():
    functions = [name for name in cited_names() if inspect.isfunction(inspect.unwrap(resolve(name)))]
    assert set(functions) <= set(COPIED), sorted(set(functions) - set(COPIED))


def test_book_the_guard_reports_a_moved_name_and_a_changed_source(tmp_path):
    script = tmp_path / "explorer-x.js"
    cited = "// as mhattn.core.positions.apply_rope and mhattn.core.positions.no_such_rope do\n"
    script.write_text(cited, encoding="utf-8")
    assert cited_names([script]) == ["mhattn.core.positions.apply_rope", "mhattn.core.positions.no_such_rope"]
    with pytest.raises(LookupError, match="mhattn.core.positions has no 'no_such_rope'"):
        resolve("mhattn.core.positions.no_such_rope")
    with pytest.raises(LookupError, match="mhattn has no 'nowhere'"):
        resolve("mhattn.nowhere.f")
    assert source_hash("mhattn.softmax") != source_hash("mhattn.core.positions.apply_rope")
