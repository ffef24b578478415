#!/usr/bin/env bash
# CI: the declared lower bounds must be true. On the lowest supported Python, install every
# direct dependency (pyproject.toml's dependencies and the test extra, with the chapter and
# book extras it pulls in) at exactly its declared minimum, then run every test of the
# package and its tools (no browser, no Binder replay) and nbval over the notebooks that meet
# each chapter dependency at its bound (see NOTEBOOKS below). A bound that does not install,
# import or pass fails this job, and so does a tracked file that the run changed.
#
#   PYTHON=/path/to/python3.10 bash .ci/min_versions.sh    # default: pyenv's 3.10.13
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
PYTHON=${PYTHON:-/root/.pyenv/versions/3.10.13/bin/python}
VENV=${VENV:-build/venv-min}

"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 10), sys.version' # the lowest requires-python
status_before=$(git status --porcelain 2>/dev/null || true)
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"

# name>=X becomes name==X for every direct dependency. Python 3.10 has no tomllib; pip vendors tomli.
pins=$("$VENV/bin/python" - <<'EOF'
import re
try:
    import tomllib
except ModuleNotFoundError:
    from pip._vendor import tomli as tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
name = project["name"]
requirements, extras, seen = list(project["dependencies"]), ["test"], set()
while extras:  # the test extra, and the extras it names (mhattn[chapter,book])
    extra = extras.pop()
    if extra in seen:
        continue
    seen.add(extra)
    for requirement in project["optional-dependencies"][extra]:
        own = re.fullmatch(rf"{name}\[([\w,-]+)\]", requirement.replace(" ", ""))
        if own:
            extras += own.group(1).split(",")
        else:
            requirements.append(requirement)
for requirement in requirements:
    match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([^,;\s]+)", requirement.strip())
    if not match:
        raise SystemExit(f"no lower bound to pin in {requirement!r}: write it as name>=version")
    print(f"{match.group(1)}=={match.group(2)}")
EOF
)
echo "+ pins:" $pins
start=$SECONDS
# --no-compile: the byte code of the modules a test imports is written when it first does;
# compiling every file of every package (JupyterLab, Sphinx, ...) here would cost minutes of CPU.
# shellcheck disable=SC2086 # one argument per pin
"$VENV/bin/python" -m pip install -q --no-compile -e ".[test]" $pins
echo "+ installed in $((SECONDS - start)) s"
"$VENV/bin/python" -m pip check

# The tests, and nbval over NOTEBOOKS (conftest.py switches it on): their stored outputs must
# come out the same at the minimum versions. What a bound can break is the package's own code
# (every test of mhattn/ runs here) and a library call a notebook makes: these notebooks make
# the chapter extra's calls (matplotlib's figures in all of them, scikit-learn's PCA and a
# widget's stored view in 05, the ipywidgets explorer). The other notebooks call NumPy and
# matplotlib as these do and run, with every test that runs a notebook's code itself (marked
# `runs_notebook`), in the main job at the current versions: executing all of them again
# here would double the CI's CPU time for no call that these do not already make.
# The browser, book-site and Binder tests need Chromium and minutes, and run in the main job.
# CI is unset here: torch has no local wheel for Python 3.10 (it would download gigabytes), so
# its comparisons skip in this job; the main job runs them with CI=true, where they must run.
NOTEBOOKS=${NOTEBOOKS:-"notebooks/01_softmax.ipynb notebooks/05_embedding_shift.ipynb notebooks/explore.ipynb"}
tests_start=$SECONDS
tests_status=0
# A test marked `retrains` checks a claim of the chapter on a fresh training run, and the
# notebooks' claim tests (tests/notebooks/test_claims_*.py) recompute the numbers the prose
# quotes with the package's own functions, which the package's tests here already call: both
# check what the chapter says, not a dependency, and run in the main job.
# On every core, as the README's command (each worker with one BLAS thread, as set for this job).
# shellcheck disable=SC2086 # one argument per notebook
env -u CI "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n auto --dist loadfile \
  -m "not retrains and not runs_notebook" tests $NOTEBOOKS \
  --ignore=tests/explorer/test_voila.py --ignore=tests/book/test_book.py --ignore=tests/notebooks/test_binder.py \
  --ignore=tests/book/test_book_explorer.py --ignore=tests/book/test_book_live_figures.py \
  --ignore-glob='tests/notebooks/test_claims_*.py' || tests_status=$?
echo "+ tests and notebooks took $((SECONDS - tests_start)) s"

# Nothing the tests ran may change a tracked file (figures are written only by refresh.sh).
status_after=$(git status --porcelain 2>/dev/null || true)
if [ "$status_after" != "$status_before" ]; then
  echo "the run changed the working tree; git status before:" >&2
  echo "$status_before" >&2
  echo "and after:" >&2
  echo "$status_after" >&2
  exit 1
fi
echo "+ min-versions job done in $((SECONDS - start)) s"
exit "$tests_status"
