# SPDX-License-Identifier: GPL-2.0
"""The Python pressure client of tools/bench/pybench, briefly, against the
running system: holder and bytes modes from 2 threads read back exactly the
bytes put (no timing is asserted)."""
import json
import subprocess
import sys
from pathlib import Path

PYBENCH = Path(__file__).resolve().parents[3] / "tools" / "bench" / "pybench"


def test_pybench_smoke_reads_back_what_it_put(fluxon_env):
    r = subprocess.run([sys.executable, str(PYBENCH), "--smoke"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for mode in ("holder", "bytes"):
        assert out[mode]["hits"] > 0 and out[mode]["misses"] == 0
        assert out[mode]["errors"] == 0 and out[mode]["content_errors"] == 0
