"""Every `dask scheduler` the docs and deploy files start binds its dashboard to
127.0.0.1 (`--dashboard-address 127.0.0.1:...`): dask's default listens on every
interface, unencrypted, even beside a TLS scheduler (deploy/README.md's recipe did)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands(path: Path) -> list[str]:
    """Each `dask scheduler` command in ``path``: a Markdown span to its closing
    backtick, a YAML args list to its ``]`` (a comment's span to its backtick), a shell
    command over its ``\\`` lines."""
    text = path.read_text()
    out = []
    for m in re.finditer(r"dask[ ,]+scheduler\b", text):
        rest = text[m.start():]
        if path.suffix == ".md":
            end = rest.find("`")
        elif path.suffix in (".yaml", ".yml"):  # an args list, or a comment's `span`
            end = min((i for i in (rest.find("]"), rest.find("`")) if i >= 0), default=-1)
        else:
            end = re.search(r"(?<!\\)\n", rest).start()  # type: ignore[union-attr]
        out.append(rest[:end if end >= 0 else len(rest)])
    return out


def test_every_documented_scheduler_binds_its_dashboard_to_loopback():
    files = [p for p in ROOT.rglob("*") if p.is_file()
             and p.suffix in (".md", ".yaml", ".yml", ".sh", ".sbatch")
             and not {".git", "tests", "workflows"} & set(p.relative_to(ROOT).parts)]
    found = {p: _commands(p) for p in files}
    cmds = [(p, c) for p, cs in found.items() for c in cs
            if "--scheduler-file" in c or "--protocol" in c or "--dashboard" in c
            or c.rstrip().endswith("scheduler")]
    assert len(cmds) >= 3, cmds  # deploy/README.md, grid.sbatch, daskcluster.yaml
    for path, cmd in cmds:
        assert re.search(r"--dashboard-address[ ,\"]+127\.0\.0\.1:\d+", cmd), \
            f"{path.relative_to(ROOT)}: {cmd!r}"
