"""The package as a maintainer publishes it and as a new reader installs it.

- ``python -m build`` makes an sdist and a wheel without a single warning; the wheel holds
  the whole package with its checkpoints, the licence file and expression, NumPy as its
  only requirement, and a description whose links work on a package index; the sdist holds
  every tracked file (notebooks, figures, tests, book...) except CI's scripts, and no cache.
- The wheel, installed bare in a fresh virtual environment with NumPy alone, imports, runs
  the worked example of ``README-pypi.md`` and the backward pass, loads its checkpoint, and
  its picture helpers and the trainer's command line say which extra to install.
- ``mhattn.__version__`` is the installed metadata's version, which is ``pyproject.toml``'s.
- A unit test file runs without nbval; nbval is on, with the notebooks' options, when
  installed.
- The README's first command opens JupyterLab at the repository's root with notebook 01
  open, as whoever runs the tests (root in CI and Docker), and the address it prints (all a
  reader has where no browser opens) leads to notebook 01 too.
- Every link of the README leads to a file of the tree, a page of the book or a notebook on
  Binder; its table lists the notebooks in the book's order; every pip command in the README
  and README-pypi.md runs in a virtual environment, and there is one way to install torch.

Building needs the ``build`` package and PyPI (or pip's cache) for setuptools and NumPy; the
Lab test needs JupyterLab. Each skips with the reason when that is missing, and fails
under ``CI=true``.
"""

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import textwrap
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

import mhattn

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
WARNING = re.compile(r"warn", re.IGNORECASE)


def _cannot_run(reason):
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and this packaging test cannot run: {reason}")
    pytest.skip(reason)


def _project_version():
    """``version = "..."`` of pyproject.toml's [project] table (read as text: Python 3.10 has no tomllib)."""
    project = PYPROJECT.split("[project]", 1)[1].split("\n[", 1)[0]
    return re.search(r'^version\s*=\s*"([^"]+)"', project, re.MULTILINE).group(1)


def _member_names(archive):
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            return set(wheel.namelist())
    with tarfile.open(archive) as sdist:
        return {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}


def _clean_copy(folder):
    """The files a fresh clone would hold (tracked, or new and not ignored), copied to ``folder``.

    Building from the working tree itself would write ``mhattn.egg-info/`` into it, and a
    stale one (an old ``SOURCES.txt``) would put files in the sdist that MANIFEST.in leaves out.
    Outside a git checkout, the tree is built as it is.
    """
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return ROOT
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """The sdist and the wheel, built from this tree the way a maintainer builds them."""
    if importlib.util.find_spec("build") is None:
        _cannot_run('the build frontend is not installed: pip install -e ".[test]"')
    out = tmp_path_factory.mktemp("dist")
    source = _clean_copy(tmp_path_factory.mktemp("source"))
    # PYTHONDONTWRITEBYTECODE makes setuptools warn that it skips byte-compiling: a warning
    # of the environment, not of the package, so the build runs without it.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    log = result.stdout + result.stderr
    if result.returncode != 0:
        if re.search(r"No matching distribution|Could not find a version|Network is unreachable", log):
            _cannot_run(f"setuptools could not be fetched for the isolated build:\n{log[-1500:]}")
        pytest.fail(f"python -m build failed:\n{log[-4000:]}")
    version = _project_version()
    return {
        "source": source,
        "log": log,
        "wheel": out / f"mhattn-{version}-py3-none-any.whl",
        "sdist": out / f"mhattn-{version}.tar.gz",
    }


def test_the_version_is_written_once_and_read_from_the_installed_metadata():
    assert mhattn.__version__ == importlib.metadata.version("mhattn") == _project_version(), (
        "mhattn.__version__, the installed metadata and pyproject.toml disagree: a stale install? "
        'run pip install -e ".[test]" again'
    )


def test_the_build_gives_no_warning(dists):
    warnings = [line for line in dists["log"].splitlines() if WARNING.search(line)]
    assert not warnings, "python -m build warned:\n" + "\n".join(warnings)
    assert dists["wheel"].is_file() and dists["sdist"].is_file()


def test_the_wheel_holds_the_package_its_checkpoints_and_the_licence(dists):
    names = _member_names(dists["wheel"])
    source = dists["source"]  # the tree the wheel was built from
    on_disk = {
        path.relative_to(source).as_posix()
        for path in (source / "mhattn").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".npz"}
    }
    assert on_disk - names == set(), "files of the package missing from the wheel"
    assert {"mhattn/data/induction.npz", "mhattn/data/induction_1layer.npz"} <= names
    assert not [name for name in names if name.split("/")[0] in {"tests", "notebooks", "figures", "book"}]
    dist_info = f"mhattn-{_project_version()}.dist-info"
    assert f"{dist_info}/licenses/LICENSE" in names
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
    headers = metadata.split("\n\n", 1)[0]
    assert "License-Expression: MIT" in headers.splitlines()
    requires = [line.split(": ", 1)[1] for line in headers.splitlines() if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == ["numpy>=2.0"], "the library must need NumPy only"
    for url in (
        "Source, https://github.com/mhattn/mhattn",
        "Documentation, https://mhattn.github.io/mhattn/",
        "Changelog, https://github.com/mhattn/mhattn/blob/main/CHANGELOG.md",
    ):
        assert f"Project-URL: {url}" in headers.splitlines()
    for python in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {python}" in headers.splitlines()


def test_the_long_description_has_only_absolute_links_and_images(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        metadata = wheel.read(f"mhattn-{_project_version()}.dist-info/METADATA").decode()
    description = metadata.split("\n\n", 1)[1]
    targets = re.findall(r"\]\(([^)\s]+)", description) + re.findall(r'(?:src|href)="([^"]+)"', description)
    assert targets, "the description should link to the book and the source"
    relative = [target for target in targets if not target.startswith("https://")]
    assert not relative, f"links that break on a package index: {relative}"


def test_the_sdist_holds_every_tracked_file_outside_ci_and_no_cache(dists):
    names = _member_names(dists["sdist"])
    assert not [n for n in names if re.search(r"(^|/)(__pycache__|\.[^/]+)(/|$)|\.pyc$", n)], "caches in the sdist"
    # Its tests re-run the notebooks and the README shows the figures: both travel with it.
    assert {"notebooks/01_softmax.ipynb", "notebooks/01_softmax.py", "figures/04_attention_heads.png"} <= names
    assert {"conftest.py", "LICENSE", "CHANGELOG.md", "tests/oracle.py", "notebooks/nbval_sanitize.cfg"} <= names
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    wanted = {name for name in tracked if not name.startswith(".") and (ROOT / name).is_file()}
    assert wanted - names == set(), "tracked files missing from the sdist (MANIFEST.in)"


BARE_CHECK = r'''
import re, sys
from pathlib import Path
import numpy as np
import mhattn
from mhattn import MultiHeadAttention, causal_mask, multihead_vjp
from mhattn.learn.shipped import load_trained

expected_version, readme = sys.argv[1], Path(sys.argv[2]).read_text(encoding="utf-8")
assert mhattn.__version__ == expected_version, mhattn.__version__
assert Path(mhattn.__file__).parent.parent.name == "site-packages", mhattn.__file__  # the wheel, not the tree

# The worked example, exactly as README-pypi.md prints it.
example = re.search(r"```python\n(.*?)```", readme, re.DOTALL).group(1)
namespace = {}
exec(compile(example, "README-pypi.md", "exec"), namespace)
x, mha, output, weights = (namespace[name] for name in ("x", "mha", "output", "weights"))

# Its numbers, recomputed independently: per head, per query, with plain vector operations.
# Four float64 stages (projection, scores, weighted sum, W_o), each a sum of at most d_model
# products: each entry is off by at most ~4 * d_model * eps times the size of the terms.
batch, seq_len, d_model = x.shape
tol = 4 * d_model * np.finfo(np.float64).eps * max(1.0, float(np.abs(x @ mha.W_qkv).max()))
d_k = d_model // mha.num_heads
Q, K, V = np.split(x @ mha.W_qkv, 3, axis=-1)
heads = np.zeros_like(Q)
for b in range(batch):
    for h in range(mha.num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        for i in range(seq_len):
            scores = np.array([Q[b, i, cols] @ K[b, j, cols] for j in range(i + 1)]) / np.sqrt(d_k)
            p = np.exp(scores - scores.max())
            p /= p.sum()
            assert np.allclose(weights[b, h, i, : i + 1], p, rtol=0, atol=tol)
            assert not weights[b, h, i, i + 1 :].any()  # the causal mask: nothing later
            heads[b, i, cols] = p @ V[b, : i + 1, cols]
assert np.allclose(output, heads @ mha.W_o, rtol=0, atol=tol * max(1.0, float(np.abs(V).max())))

# The backward pass against a central finite difference of sum(output * d_output).
d_output = np.random.default_rng(1).standard_normal(output.shape)
_, _, backward = multihead_vjp(x, mha.W_qkv, mha.W_o, mha.num_heads, causal_mask(seq_len))
grads = backward(d_output)
direction = np.random.default_rng(2).standard_normal(x.shape)
step = 1e-5  # central difference: truncation ~ step**2 * (third derivative), rounding ~ eps * |loss| / step
loss = lambda x_: float((mha(x_, causal_mask(seq_len))[0] * d_output).sum())
numeric = (loss(x + step * direction) - loss(x - step * direction)) / (2 * step)
analytic = float((grads["x"] * direction).sum())
assert abs(numeric - analytic) < 1e-7 * max(1.0, abs(loss(x)), abs(analytic)), (numeric, analytic)

# The trained checkpoint ships inside the package.
assert len(load_trained(num_layers=2).layers) == 2 and len(load_trained(num_layers=1).layers) == 1

# The rest of the library imports with NumPy alone too.
import mhattn.learn.circuits, mhattn.engine, mhattn.explorer, mhattn.core.positions  # noqa: E401,F401

# NumPy is the only third-party module the library loaded; the pictures need the extra.
third_party = {name.split(".")[0] for name in sys.modules} & {
    "matplotlib", "sklearn", "scipy", "IPython", "ipywidgets", "PIL", "threadpoolctl", "tqdm", "jupyter_core"}
assert not third_party, third_party
try:
    __import__("mhattn.pictures.plots")
except ImportError as error:
    assert 'pip install "mhattn[chapter]"' in str(error), str(error)
else:
    raise AssertionError("mhattn.pictures.plots imported without its extra")
# The PCA view (the explorer's frame needs it) runs on NumPy alone.
from mhattn.pictures.embedding_shift import embedding_shift_2d
assert embedding_shift_2d(np.zeros((3, 4)), np.eye(3, 4))[0].shape == (3, 2)
try:
    from mhattn.explorer import explorer  # noqa: F401  (the widget)
except ImportError as error:
    assert 'pip install "mhattn[chapter]"' in str(error), str(error)
else:
    raise AssertionError("the explorer's widget imported without ipywidgets")

# The trainer runs on the bare library: without tqdm and threadpoolctl it says what it does instead.
import subprocess
trainer = subprocess.run([sys.executable, "-m", "mhattn.train", "--out", "first-run", "--steps", "1",
                          "--layers", "1", "--batch-size", "4"], capture_output=True, text=True, timeout=120)
assert trainer.returncode == 0 and "saved first-run.npz" in trainer.stdout, trainer.stderr
assert "tqdm is not installed" in trainer.stderr and "Traceback" not in trainer.stderr, trainer.stderr
print("bare wheel OK")
'''


def test_the_wheel_installed_bare_with_numpy_alone_works(dists, tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # The current pip installs into the bare environment; NumPy at the version running here
    # (pip's cache usually has it), and nothing else.
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(dists["wheel"]), f"numpy=={importlib.metadata.version('numpy')}"],
        capture_output=True, text=True, timeout=600,
    )
    if install.returncode != 0:
        _cannot_run(f"pip could not install the wheel and NumPy:\n{install.stderr[-1500:]}")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    result = subprocess.run(
        [python, "-c", BARE_CHECK, _project_version(), str(ROOT / "README-pypi.md")],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "bare wheel OK" in result.stdout


# --- nbval: on when installed, never needed by unit tests ---------------------------------------


def test_nbval_is_on_with_the_notebooks_options_when_installed(pytestconfig):
    if not pytestconfig.pluginmanager.hasplugin("nbval"):
        _cannot_run('nbval is not installed: pip install -e ".[test]"')
    option = pytestconfig.option
    assert option.nbval or option.nbval_lax
    if not option.nbval_kernel_name:
        assert option.nbval_current_env
    if not any(arg.startswith("--nbval-sanitize-with") for arg in pytestconfig.invocation_params.args):
        assert Path(option.nbval_sanitize_with) == ROOT / "notebooks" / "nbval_sanitize.cfg"


def _pytest(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
    )


def test_unit_tests_run_without_nbval_and_a_notebook_says_what_it_needs():
    unit = _pytest("-p", "no:nbval", "tests/core/test_softmax.py")
    assert unit.returncode == 0 and " passed" in unit.stdout, unit.stdout[-2000:] + unit.stderr[-2000:]
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    notebook = _pytest("-p", "no:nbval", "-rs", "notebooks/01_softmax.ipynb", env=env)
    assert notebook.returncode == 0 and "1 skipped" in notebook.stdout, notebook.stdout[-2000:]
    assert 'needs nbval to run: pip install -e ".[test]"' in notebook.stdout
    strict = _pytest("-p", "no:nbval", "notebooks/01_softmax.ipynb", env=dict(env, CI="true"))
    assert strict.returncode == 1 and "1 failed" in strict.stdout, strict.stdout[-2000:]


# --- the README's first command ---------------------------------------------------------------


def _first_command():
    """The shell command in the README block after ``<!-- first-command -->``."""
    block = README.split("<!-- first-command -->", 1)[1]
    return re.search(r"```bash\n(.*?)\n```", block, re.DOTALL).group(1).strip()


def test_the_first_command_installs_the_chapter_extra_and_opens_lab_at_the_root():
    command = _first_command()
    assert '-m pip install -e ".[chapter]"' in command
    lab = command.split("&&")[-1].split()
    assert lab[:2] == [".venv/bin/jupyter", "lab"]
    assert "--allow-root" in lab  # root is the usual user in Docker
    assert "--LabApp.default_url=/lab/tree/notebooks/01_softmax.ipynb" in lab  # what it opens and prints


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def test_the_first_command_opens_notebook_01_in_lab_with_the_repository_as_root(tmp_path):
    """Run the README's ``jupyter lab ...`` as written, as whoever runs the tests.

    Only the port is added (a free one). The browser is a script that records the address
    Jupyter asks it to open (through ``$BROWSER``); the test then opens that address and
    lists the server's root folder. The addresses Jupyter prints (what a reader copies where
    no browser opens, as in Docker) must lead to notebook 01 as well, not to Lab's launcher.
    """
    jupyter = Path(sys.executable).parent / "jupyter"
    if importlib.util.find_spec("jupyterlab") is None or not jupyter.exists():
        _cannot_run('JupyterLab is not installed: pip install -e ".[chapter]"')
    lab = _first_command().split("&&")[-1].split()
    record = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys, urllib.parse, urllib.request
        from pathlib import Path
        url = sys.argv[-1]
        if url.startswith("file:"):  # Jupyter's redirect page, which holds the real address
            url = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path)).read_text()
        Path({str(record)!r}).write_text(url)
        """))
    browser.chmod(0o755)
    port = _free_port()
    env = dict(os.environ, HOME=str(tmp_path / "home"), BROWSER=str(browser))
    env.pop("JUPYTER_TOKEN", None)
    log_path = tmp_path / "lab.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        [str(jupyter), *lab[1:], f"--port={port}", "--ServerApp.port_retries=0"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not record.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if not record.exists():
            server.kill()
            pytest.fail(f"JupyterLab opened no page (exit {server.poll()}):\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)  # the script has finished writing
        opened = re.search(r"https?://[^\"'\s<>]+", record.read_text()).group(0).replace("&amp;", "&")
        address, _, query = opened.partition("?")
        assert address == f"http://localhost:{port}/lab/tree/notebooks/01_softmax.ipynb", opened
        token = dict(pair.split("=", 1) for pair in query.split("&") if "=" in pair).get("token", "")
        status, page = _get(opened)
        assert status == 200 and "JupyterLab" in page
        status, body = _get(f"http://localhost:{port}/api/contents?token={token}")
        root = {item["name"] for item in json.loads(body)["content"]}
        assert {"README.md", "notebooks", "figures", "mhattn"} <= root, root
        status, body = _get(f"http://localhost:{port}/api/contents/notebooks/01_softmax.ipynb?content=0&token={token}")
        assert json.loads(body)["type"] == "notebook"
        printed = log_path.read_text()
        running = printed.split("is running at:", 1)[1].split("Use Control-C", 1)[0]
        addresses = re.findall(r"https?://[^\s]+", running)
        assert addresses, printed[-3000:]
        for address in addresses:
            assert re.fullmatch(rf"http://(localhost|127\.0\.0\.1):{port}/lab/tree/notebooks/01_softmax\.ipynb"
                                rf"\?token={token}", address), address
        status, page = _get(addresses[0])
        assert status == 200 and "JupyterLab" in page
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()


# --- what the README promises ------------------------------------------------------------------

BOOK = "https://mhattn.github.io/mhattn/"
BINDER = "https://mybinder.org/v2/gh/mhattn/mhattn/HEAD?urlpath="


def _book_order():
    """The chapter's notebooks in the book's reading order (book/build.py)."""
    spec = importlib.util.spec_from_file_location("book_build_order", ROOT / "book" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [path.name for path in module.chapter_notebooks()]


def test_every_link_of_the_readme_leads_to_a_file_a_book_page_or_a_notebook_on_binder():
    targets = re.findall(r"\]\(([^)\s]+)\)", README) + re.findall(r'(?:src|href)="([^"]+)"', README)
    assert len(targets) > 30
    broken = []
    for target in targets:
        if target.startswith(BINDER):
            where = target[len(BINDER):]
            path = re.sub(r"^(lab/tree|voila/render)/", "", where)
            if path == where or not (ROOT / path).is_file():
                broken.append(target)
        elif target.startswith(BOOK + "notebooks/"):
            page = target[len(BOOK + "notebooks/"):]
            if not page.endswith(".html") or not (ROOT / "notebooks" / page.replace(".html", ".ipynb")).is_file():
                broken.append(target)
        elif not re.match(r"https?://", target) and not (ROOT / target.split("#")[0]).exists():
            broken.append(target)
    assert broken == [], broken


def test_the_readme_table_lists_every_notebook_in_the_book_s_order():
    table = README.split("## The chapter", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"\(\[notebook\]\(notebooks/([\w.]+\.ipynb)\)\)", table)
    assert listed == _book_order()


def _shell_lines(text):
    return [line for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL) for line in block.splitlines()]


@pytest.mark.parametrize("name", ["README.md", "README-pypi.md"])
def test_every_pip_command_of_the_readme_runs_in_a_virtual_environment(name):
    """Each pip command is the virtual environment's (``.venv/bin/python -m pip``), never the system Python's."""
    text = (ROOT / name).read_text(encoding="utf-8")
    commands = [command.strip() for line in _shell_lines(text) for command in line.split("&&")
                if re.search(r"\bpip\b", command)]
    assert commands
    outside = [command for command in commands if not command.startswith(".venv/bin/python -m pip ")]
    assert outside == [], outside
    for line in _shell_lines(text):  # and the environment is made before it is used
        if ".venv/bin/" in line and "python3 -m venv .venv" in line:
            assert line.index("python3 -m venv .venv") < line.index(".venv/bin/")


def test_the_readme_installs_torch_one_way_the_cpu_build():
    """Every torch install in the README is the one under ``<!-- torch-command -->``: the CPU build."""
    block = README.split("<!-- torch-command -->", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", block, re.DOTALL).group(1).strip()
    assert command.endswith("--index-url https://download.pytorch.org/whl/cpu")
    installs = [line.split("#")[0].strip() for line in _shell_lines(README)
                if re.search(r"pip install .*\btorch\b", line)]
    assert len(installs) >= 2 and set(installs) == {command}, installs
    assert "CUDA build" in README  # the reason is given where the command is
