# SPDX-License-Identifier: GPL-2.0
"""pip installs the package offline (no build isolation: no network), from
a built tree or against an installed libfluxonkv (pkg-config), and the
installed copy imports its own extension, not the tree's."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1]
REPO = PKG.parents[1]
BUILD = Path(os.environ.get("FLUXONKV_BUILD") or REPO / "build")

IMPORT = ("import fluxonkv, fluxonkv._native as n, fluxonkv.mooncake as m;"
          "print(fluxonkv.__file__); print(n.__file__);"
          "print(m.ReplicateConfig().replica_num);"
          "print(any('libfluxonkv.so.1' in l for l in open('/proc/self/maps')))")


def pip_install(tmp_path, tree, **env_extra):
    """pip install the package copy under @tree into tmp_path/site."""
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLUXONKV_BUILD", "PYTHONPATH")}
    env.update(PIP_NO_INDEX="1", **env_extra)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-deps", "--no-cache-dir",
                        "--target", str(site), str(tree / "userspace" / "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout
    files = {p.name for p in (site / "fluxonkv").iterdir()}
    assert {"py.typed", "_native.pyi", "mooncake.py"} <= files
    assert any(f.startswith("_native.") and f.endswith(".so") for f in files)
    return site, env


def import_from(site, env, cwd):
    """(fluxonkv path, _native path, replica_num, libfluxonkv.so.1 mapped)"""
    r = subprocess.run([sys.executable, "-c", IMPORT], cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=dict(env, PYTHONPATH=str(site)))
    assert r.returncode == 0, r.stdout
    init, native, replicas, shared = r.stdout.split()
    assert init.startswith(str(site)) and native.startswith(str(site))
    assert replicas == "1"
    return shared == "True"


def package_copy(tmp_path):
    """A private copy of the package (the source may be read-only, and
    pip builds in place)."""
    tree = tmp_path / "tree"
    shutil.copytree(PKG, tree / "userspace" / "python",
                    ignore=shutil.ignore_patterns("tests", "*.so", "build",
                                                  "*.egg-info", "__pycache__"))
    return tree


@pytest.fixture
def built():
    if not (BUILD / "libfluxonkv.a").exists():
        pytest.skip(f"no {BUILD}/libfluxonkv.a: run make")


def test_pip_install_from_a_built_tree(tmp_path, built):
    # the tree's layout around the copy: headers and the built archive
    tree = package_copy(tmp_path)
    (tree / "userspace" / "include").symlink_to(REPO / "userspace" / "include")
    (tree / "uapi").symlink_to(REPO / "uapi")
    (tree / "build").symlink_to(BUILD)
    site, env = pip_install(tmp_path, tree)
    # the archive is linked in: no shared library needed at run time
    assert import_from(site, env, tmp_path) is False


def test_pip_install_against_the_installed_library(tmp_path, built):
    # 'make install' into a staging root, then a build that sees only it
    root = tmp_path / "root"
    r = subprocess.run(["sh", str(REPO / "packaging" / "install")],
                       env=dict(os.environ, O=str(BUILD), DESTDIR=str(root),
                                PREFIX="/usr"),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert r.returncode == 0, r.stdout
    tree = package_copy(tmp_path)  # no build/ next to it
    site, env = pip_install(tmp_path, tree, FLUXONKV_PKGCONFIG="1",
                            PKG_CONFIG_PATH=str(root / "usr/lib/pkgconfig"),
                            PKG_CONFIG_SYSROOT_DIR=str(root))
    # found in its installed location by the dynamic linker
    env["LD_LIBRARY_PATH"] = str(root / "usr/lib")
    assert import_from(site, env, tmp_path) is True


SHIM_IMPORT = ("import mooncake, mooncake.store as ms, fluxonkv.mooncake as fm;"
               "print(ms.__file__); print(mooncake.FLUXONKV);"
               "print(ms.MooncakeDistributedStore is fm.MooncakeDistributedStore);"
               "print(sorted(ms.__all__))")


def test_pip_installs_the_opt_in_mooncake_shim(tmp_path, built):
    """fluxonkv-mooncake is its own distribution: installed next to
    fluxonkv it gives the stacks their `from mooncake.store import
    MooncakeDistributedStore`; fluxonkv alone installs no `mooncake`."""
    tree = package_copy(tmp_path)
    (tree / "userspace" / "include").symlink_to(REPO / "userspace" / "include")
    (tree / "uapi").symlink_to(REPO / "uapi")
    (tree / "build").symlink_to(BUILD)
    site, env = pip_install(tmp_path, tree)
    assert not (site / "mooncake").exists()      # never by default
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--no-build-isolation", "--no-index", "--no-deps",
                        "--no-cache-dir", "--target", str(site),
                        str(tree / "userspace" / "python" / "mooncake-shim")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout
    assert {p.name for p in (site / "mooncake").iterdir()} >= {"__init__.py",
                                                               "store.py"}
    assert any(p.name.startswith("fluxonkv_mooncake-")
               for p in site.iterdir())
    r = subprocess.run([sys.executable, "-c", SHIM_IMPORT], cwd=tmp_path,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=dict(env, PYTHONPATH=str(site)))
    assert r.returncode == 0, r.stdout
    path, flag, same, names = r.stdout.split("\n")[:4]
    assert path.startswith(str(site / "mooncake")) and flag == "True"
    assert same == "True"
    assert "MooncakeDistributedStore" in names and "SoftPinAction" in names
