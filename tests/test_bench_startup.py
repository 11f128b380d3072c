"""bench/startup.py compares a checkout with installed packages fairly: each arm
keeps its bytecode (in a PYTHONPYCACHEPREFIX) even where the environment sets
PYTHONDONTWRITEBYTECODE, so a checkout's modules are not compiled on every run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.startup import env_for
from tests.conftest import ROOT


def test_each_arm_keeps_its_bytecode_in_the_prefix(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert env_for(Path(ROOT))["PYTHONDONTWRITEBYTECODE"] == "1"  # as found, without a folder
    pycache = str(tmp_path / "pyc")
    env = env_for(Path(ROOT), pycache)
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PYTHONPATH"] == str(ROOT)
    subprocess.run([sys.executable, "-c", "import transforms.stats.t_table"], cwd=ROOT,
                   env=env, check=True)
    written = [f for _, _, files in os.walk(pycache) for f in files]
    assert any(f.startswith("t_table.") and f.endswith(".pyc") for f in written)
