"""The product speaks to its reader, not about how it was made.

Notebooks, the package's docstrings and comments, the README, the book's pages and the
trainer's ``--help`` must not mention the work that produced them: "the issue", "our goal",
a speed-up measured "against a goal of 20". Each pattern below names one such phrase
precisely, so that the same words in their ordinary sense pass: ``targets`` as training
labels, "the target shape" of a reshape, a "goal" a model pursues. ``ALLOWED`` lists the
few remaining lines that use a pattern's words legitimately, each with its reason.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PATTERNS = {
    # "the issue of precision" is English; "the issue" alone points at a tracker
    "a tracker's issue": r"\b(?:the|this|that|our) issue\b(?! of\b)|\bissue's\b|\bissues? ?#\d+",
    "our goal": r"\bour (?:own )?goals?\b|\b(?:against|versus|vs\.?) (?:a|the|our) (?:goal|target)\b",
    "a goal set for the work": r"\b(?:a|the) (?:goal|target) of \d",
    "our target": r"\bour targets?\b|\b(?:met|meets|meet|hit|hits|missed|misses|beat|beats) (?:the|our|its) targets?\b",
    "a target of the work": r"\btargets? (?:of|for) (?:this|the) (?:issue|task|project|work|release|sprint)\b",
    "process vocabulary": r"\bacceptance criteri|\bthe brief\b|\bthe lead (?:said|asked|wants)\b",
}

#: (path relative to the repository, a substring of the line): lines that use the words legitimately.
ALLOWED = {
    # Vaswani et al.'s own section title, quoted in a reference.
    ("notebooks/11_production.py", "Applications of Attention in our Model"),
}


def product_files():
    """The files a reader sees: notebook sources, the package, the README, the book's pages."""
    files = sorted((ROOT / "notebooks").glob("*.py"))
    files += sorted((ROOT / "mhattn").rglob("*.py"))
    files += [ROOT / "README.md"] + sorted((ROOT / "book").glob("*.md"))
    return [path for path in files if path.is_file()]


def hits(lines, where):
    """``where:line: phrase`` for each line that matches a pattern and is not allowed."""
    found = []
    for number, line in enumerate(lines, start=1):
        for label, pattern in PATTERNS.items():
            if re.search(pattern, line, flags=re.IGNORECASE) and not any(
                where == path and snippet in line for path, snippet in ALLOWED
            ):
                found.append(f"{where}:{number}: {label}: {line.strip()[:100]}")
    return found


def test_the_patterns_find_process_words_and_spare_their_ordinary_senses():
    process = [
        "# This fixes the issue with masks.",
        "see issue #17 for the discussion",
        "the issue's second point",
        "about 80 times faster, against a goal of 20",
        "Our goal is a chapter better than d2l.",
        "a target of 20x was set",
        "this meets our target",
        "the targets for this release",
    ]
    ordinary = [
        "targets : ndarray of int, shape (count,)",
        "The target shape is (batch, num_heads, seq_len, d_k)",
        "loss = cross_entropy(logits, targets)",
        "the model's goal is to predict the next token",
        "an issue of precision",
        "the issue of precision",
    ]
    assert all(hits([line], "x") for line in process), [line for line in process if not hits([line], "x")]
    assert not any(hits([line], "x") for line in ordinary), [line for line in ordinary if hits([line], "x")]


def test_allowed_lines_still_exist():
    """An allowlist entry whose line is gone would silently allow it anywhere it returns."""
    for path, snippet in ALLOWED:
        assert snippet in (ROOT / path).read_text(encoding="utf-8"), (path, snippet)


def test_no_process_words_in_the_notebooks_the_package_the_readme_and_the_book():
    found = []
    for path in product_files():
        where = path.relative_to(ROOT).as_posix()
        found += hits(path.read_text(encoding="utf-8").splitlines(), where)
    assert not found, "words about our own process, in text a reader sees:\n" + "\n".join(found)


def test_no_process_words_in_the_trainers_help():
    result = subprocess.run(
        [sys.executable, "-m", "mhattn.train", "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    if result.returncode != 0 and "No module named" in result.stderr:
        pytest.fail(f"python -m mhattn.train --help failed: {result.stderr[-300:]}")
    assert result.returncode == 0, result.stderr[-500:]
    found = hits(result.stdout.splitlines(), "python -m mhattn.train --help")
    assert not found, "\n".join(found)
