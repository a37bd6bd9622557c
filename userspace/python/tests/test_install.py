# SPDX-License-Identifier: GPL-2.0
"""pip installs the package offline (no build isolation: no network) and
the installed copy imports its own extension, not the tree's."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1]
REPO = PKG.parents[1]


def test_pip_install_offline_then_import_from_the_install(tmp_path):
    build = Path(os.environ.get("FLUXONKV_BUILD") or REPO / "build")
    if not (build / "libfluxonkv.a").exists():
        pytest.skip(f"no {build}/libfluxonkv.a: run make")
    # A private copy of the tree's layout (the source may be read-only, and
    # pip builds in place): the package, its headers, the built archive.
    tree = tmp_path / "tree"
    shutil.copytree(PKG, tree / "userspace" / "python",
                    ignore=shutil.ignore_patterns("tests", "*.so", "build",
                                                  "*.egg-info", "__pycache__"))
    (tree / "userspace" / "include").symlink_to(REPO / "userspace" / "include")
    (tree / "uapi").symlink_to(REPO / "uapi")
    (tree / "build").symlink_to(build)
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLUXONKV_BUILD", "PYTHONPATH")}
    env["PIP_NO_INDEX"] = "1"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-deps", "--no-cache-dir",
                        "--target", str(site), str(tree / "userspace" / "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout
    files = {p.name for p in (site / "fluxonkv").iterdir()}
    assert {"py.typed", "_native.pyi", "mooncake.py"} <= files
    assert any(f.startswith("_native.") and f.endswith(".so") for f in files)
    code = ("import fluxonkv, fluxonkv._native as n, fluxonkv.mooncake as m;"
            "print(fluxonkv.__file__); print(n.__file__);"
            "print(m.ReplicateConfig().replica_num)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=dict(env, PYTHONPATH=str(site)))
    assert r.returncode == 0, r.stdout
    init, native, replicas = r.stdout.split()
    assert init.startswith(str(site)) and native.startswith(str(site))
    assert replicas == "1"
