"""The oracle's own Python environment: vLLM 0.33.0 without its dependency
tree, a CPU build of torch and the pure-Python packages its scheduler
imports. vLLM cannot be an ordinary extra of serq (its declared dependencies
pull CUDA builds and pin other versions), so `serq oracle setup` builds this
environment apart, and `serq oracle trace` runs the driver in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "driver.py"
CONSTRAINTS = HERE / "constraints.txt"
VLLM = "vllm==0.33.0"
TORCH = "torch==2.13.0"
# found by trial: each is imported on the way to vllm.v1.core.sched.scheduler or
# by ModelConfig (einops: the architecture inspection imports the llama model)
PURE = ["numpy", "packaging", "pydantic", "regex", "cbor2", "psutil", "pyzmq", "urllib3", "transformers",
        "aiohttp", "requests", "openai-harmony", "openai", "pillow", "pybase64", "cachetools", "msgspec",
        "cloudpickle", "uvloop", "py-cpuinfo", "prometheus_client", "xgrammar", "fastapi",
        "partial_json_parser", "llguidance", "einops"]
SMOKE = {"block_size": 4, "num_gpu_blocks": 8, "max_num_batched_tokens": 8, "max_num_seqs": 4,
         "requests": [{"id": "r0", "arrival_step": 0, "prompt_len": 6, "max_tokens": 2}]}


def default_venv() -> Path:
    env = os.environ.get("SERQ_ORACLE_VENV")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "serq" / "vllm-oracle"


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def steps(venv: Path, *, wheel: str | None = None, pinned: bool = True, python: str | None = None):
    """The commands that build the environment, in order, as (what, argv)."""
    py = str(python_of(venv))
    pip = [py, "-m", "pip", "install", "--quiet"]
    lock = ["-c", str(CONSTRAINTS)] if pinned else []
    return [
        ("create the environment", [python or sys.executable, "-m", "venv", str(venv)]),
        ("vLLM without its dependencies", pip + ["--no-deps", wheel or VLLM]),
        ("torch (CPU)", pip + lock + [TORCH]),
        ("the pure-Python packages the scheduler imports", pip + lock + PURE),
    ]


def smoke(venv: Path) -> str:
    """Run the driver on a one-request scenario with an empty vLLM cache
    directory (a warm cache would hide a missing package); returns vLLM's
    summary line, raises RuntimeError with the driver's output."""
    with tempfile.TemporaryDirectory() as d:
        sc = Path(d) / "smoke.json"
        sc.write_text(json.dumps(SMOKE))
        env = dict(os.environ, VLLM_CACHE_ROOT=str(Path(d) / "vllm-cache"))
        p = subprocess.run([str(python_of(venv)), str(DRIVER), str(sc), "-o", os.devnull],
                           capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip() or f"exit {p.returncode}")
    return p.stderr.strip().splitlines()[-1]


def run_driver(venv: Path, scenario: str, output: str, max_steps: int | None = None,
               full: bool = False) -> subprocess.CompletedProcess:
    argv = [str(python_of(venv)), str(DRIVER), scenario, "-o", output]
    if max_steps is not None:
        argv += ["--max-steps", str(max_steps)]
    if full:
        argv.append("--full")
    return subprocess.run(argv, capture_output=True, text=True)
