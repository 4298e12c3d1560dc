"""A local Ray instance started by ``--executor ray`` keeps its sessions under a folder
of its own and removes it on close; a folder left by a run whose process is gone is
removed by the next one, with the processes holding files in it (Ray's agents outlive
a killed driver); a live process's folder is not touched (docs/parallel.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from ccmatic.engine.parallel.executor import RayExecutor, map_unordered


def _ray_sessions() -> set[str]:
    root = Path(tempfile.gettempdir()) / "ray"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def test_a_local_ray_instance_leaves_no_folder() -> None:
    ray = pytest.importorskip("ray")  # installed with the 'test' extra; CI always has it
    if ray.is_initialized():  # another module's instance: this test starts its own
        ray.shutdown()
    base = Path(tempfile.gettempdir())
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = base / f"ccmatic-ray-{dead.pid}-test"
    live = base / f"ccmatic-ray-{os.getpid()}-test"
    stale.mkdir()
    live.mkdir()
    with (stale / "agent.log").open("w") as log:  # a process a killed run left, a file open in its folder
        orphan = subprocess.Popen(["sleep", "120"], stdout=log)
    before = _ray_sessions()
    try:
        ex = RayExecutor(1)
        own = ex._temp_dir
        assert own is not None and Path(own).is_dir() and any(Path(own).iterdir())
        assert not stale.exists() and live.exists()
        assert orphan.wait(timeout=10) == -9  # killed
        assert list(map_unordered(ex, os.path.basename, ["/a/b"])) == [(0, "b")]  # a library function
        ex.close()
        assert not Path(own).exists()
        assert _ray_sessions() == before  # nothing new in Ray's default /tmp/ray
    finally:
        orphan.kill()
        live.rmdir()
        shutil.rmtree(stale, ignore_errors=True)
