"""``learn --serial`` runs without Dask: a fresh process never imports ``distributed``
(its import was part of every serial start-up, for the logging set-up alone)."""

from __future__ import annotations

import json
import subprocess
import sys

from bnsl_dist.data.registry import bundled_path

_PROBE = ("import atexit, sys; atexit.register(lambda: print('distributed' in sys.modules));"
          " from bnsl_dist.cli import main; main()")


def test_serial_learn_imports_no_dask(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-c", _PROBE, "learn",
                          str(bundled_path("jkl/wine.BIC.3.jkl.gz")), "--iterations", "2",
                          "--serial", "-q", "-o", str(out)],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert run.stdout.strip() == "False"
    assert json.loads(out.read_text())["score"] < 0  # it learned
