# SPDX-License-Identifier: GPL-2.0
"""Build of fluxonkv._native (metadata: pyproject.toml).

Where libfluxonkv comes from, first match wins:

1. ``FLUXONKV_BUILD=DIR``: the static ``DIR/libfluxonkv.a`` of a source
   tree build, headers from the tree (``userspace/include``, ``uapi``);
2. the tree this package sits in, when ``make`` has built
   ``<repo>/build/libfluxonkv.a`` (so ``make python`` and
   ``pip install ./userspace/python`` in a built tree need nothing
   installed, and the extension needs no library at run time);
3. the installed library: ``pkg-config fluxonkv`` (libfluxonkv-dev; the
   extension then links ``libfluxonkv.so.1``).

``FLUXONKV_PKGCONFIG=1`` skips 1 and 2 (what a distribution package
wants: link the shared library its package installs).
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WARN = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "fluxonkv"], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def native():
    src = ["fluxonkv/_native.c"]
    if os.environ.get("FLUXONKV_PKGCONFIG") != "1":
        build = Path(os.environ.get("FLUXONKV_BUILD") or REPO / "build")
        archive = build / "libfluxonkv.a"
        header = REPO / "userspace" / "include" / "fluxonkv.h"
        if archive.exists() and header.exists():
            return Extension("fluxonkv._native", src,
                             include_dirs=[str(header.parent),
                                           str(REPO / "uapi")],
                             extra_objects=[str(archive)],
                             libraries=["uring", "pthread"],
                             extra_compile_args=WARN)
        if os.environ.get("FLUXONKV_BUILD"):
            sys.exit(f"fluxonkv: FLUXONKV_BUILD={build}: no {archive}")
    cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
    if cflags is None or libs is None:
        sys.exit("fluxonkv: libfluxonkv not found: run 'make' in the source "
                 "tree (builds build/libfluxonkv.a), set FLUXONKV_BUILD, or "
                 "install libfluxonkv-dev (pkg-config fluxonkv)")
    return Extension("fluxonkv._native", src,
                     extra_compile_args=WARN + cflags, extra_link_args=libs)


setup(packages=["fluxonkv"],
      package_data={"fluxonkv": ["py.typed", "*.pyi"]},
      ext_modules=[native()])
