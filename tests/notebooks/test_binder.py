"""The Binder configuration, proved without Docker by binder/check.py.

The check builds two fresh environments from PyPI and takes minutes, so it runs when asked
for with MHATTN_CHECK_BINDER=1 and skips otherwise. CI (.ci/run) runs
binder/check.py itself, beside the other tests, in its own copy of the tree.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    os.environ.get("MHATTN_CHECK_BINDER") != "1",
    reason="the Binder replay takes minutes: set MHATTN_CHECK_BINDER=1 (CI runs binder/check.py beside the tests)",
)
def test_repo2docker_accepts_the_repository_and_its_environment_runs_the_widget_notebooks():
    result = subprocess.run(
        [sys.executable, str(ROOT / "binder" / "check.py")], cwd=ROOT, capture_output=True, text=True, timeout=1200
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Binder configuration OK" in result.stdout


def test_binder_shuts_down_kernels_of_closed_pages_as_the_stand_alone_app_does():
    """On Binder the explorer runs inside the Jupyter server: postBuild gives that server voila.json's culling."""
    binder = json.loads((ROOT / "binder" / "jupyter_server_config.json").read_text(encoding="utf-8"))
    voila = json.loads((ROOT / "voila.json").read_text(encoding="utf-8"))
    assert binder["MappingKernelManager"] == voila["MappingKernelManager"]
    assert binder["MappingKernelManager"]["cull_idle_timeout"] > 0
    post_build = ROOT / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK)
    assert "cp binder/jupyter_server_config.json" in post_build.read_text(encoding="utf-8")
