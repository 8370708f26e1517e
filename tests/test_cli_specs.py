"""The command line is generated from the spec models (bnsl_dist/cli/_specs.py): every
field of a spec model has its option, in `learn` and in `cache build`; learn takes the
generated search and budget options and the spec layer's rules; and no command module
imports another
(docs/ARCHITECTURE.md "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bnsl_dist.cache.spec import ITERATION_CACHE_SCORES, CacheSpec, with_iteration_budget
from bnsl_dist.cli._specs import (
    OPTION_FIELDS,
    cache_spec_with,
    search_spec,
)
from bnsl_dist.cli.cache import build_cmd
from bnsl_dist.cli.learn import learn_cmd
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import DEFAULT_ALGORITHM
from bnsl_dist.search.qds import ScreeningSpec
from bnsl_dist.search.spec import BudgetSpec, SearchSpec

CLI = Path(__file__).resolve().parents[1] / "bnsl_dist" / "cli"


def _params(cmd: click.Command) -> dict[str, click.Parameter]:
    return {p.name: p for p in cmd.params if p.name is not None}


@pytest.mark.parametrize("model", [SearchSpec, BudgetSpec, CacheSpec, ScreeningSpec])
def test_every_spec_field_has_an_option_in_learn(model):
    """A field added to a spec model without its option fails here (the table of
    OPTION_FIELDS too: it must name every field but a cache's ``path``, the DATA|CACHE
    argument)."""
    fields = set(model.model_fields) - ({"path"} if model is CacheSpec else set())
    assert set(OPTION_FIELDS[model]) == fields
    learn = _params(learn_cmd)
    missing = {f: p for f, p in OPTION_FIELDS[model].items()
               if p != "(budget options)" and p not in learn}
    assert not missing, f"learn has no option for {model.__name__} fields {missing}"


def test_every_cache_field_has_an_option_in_cache_build():
    build = _params(build_cmd)
    assert {f for f, p in OPTION_FIELDS[CacheSpec].items() if p not in build} == set()
    assert "--method" in build["cache_method"].opts  # cache build's own spelling


_SEARCH_FLAGS = {"--algorithm", "-a", "-k", "--param", "--seconds", "--iterations",
                 "--checkpoints"}


def test_learn_uses_the_generated_search_and_budget_options():
    """learn.py declares none of the search's or the budget's flags itself: its command is
    decorated with the generated ``search_options`` and ``budget_options``, builds the
    search with ``_specs.search_spec`` and the cache with ``cache_spec_with(...,
    budget=...)`` (the iteration-budget rule is the spec layer's, not restated)."""
    tree = ast.parse((CLI / "learn.py").read_text())
    (cmd,) = [n for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef) and n.name == "learn_cmd"]
    names = {d.id for d in cmd.decorator_list if isinstance(d, ast.Name)}
    assert {"search_options", "budget_options"} <= names
    by_hand = {a.value for n in ast.walk(tree) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr == "option"
               for a in n.args if isinstance(a, ast.Constant)} & _SEARCH_FLAGS
    assert not by_hand, f"learn.py declares {by_hand} by hand"
    calls = {n.func.id: n for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "search_spec" in calls and "_search_spec" not in calls
    assert "budget" in {k.arg for k in calls["cache_spec_with"].keywords}
    assert "ITERATION_CACHE_SCORES" not in (CLI / "learn.py").read_text()


def test_generated_search_and_budget_options_keep_learns_command_line():
    """The flags, parameters, repetition and defaults learn had when it declared them by
    hand (flags as typed by users and scripts: a change here breaks them)."""
    learn = _params(learn_cmd)
    given = learn_cmd.make_context("learn", ["nltcs", "-o", "r.json"]).params  # parsed
    got = {name: (learn[name].opts, learn[name].multiple, given[name])
           for name in ("algorithm", "k", "params", "seconds", "iterations", "checkpoints")}
    assert got == {"algorithm": (["--algorithm", "-a"], False, DEFAULT_ALGORITHM),
                   "k": (["-k"], False, None), "params": (["--param"], True, ()),
                   "seconds": (["--seconds"], False, None),
                   "iterations": (["--iterations"], False, None),
                   "checkpoints": (["--checkpoints"], False, None)}


def test_impute_options_are_generated_from_its_task_and_keep_its_command_line():
    """Every ImputeTask field but its kind has an impute option, impute.py declares none
    of them by hand, and the flags, defaults and bounds are those impute had when it
    declared them itself (the defaults now the model's)."""
    from bnsl_dist.cli.impute import impute_cmd
    from bnsl_dist.sem.spec import ImputeTask

    assert set(OPTION_FIELDS[ImputeTask]) == set(ImputeTask.model_fields) - {"kind"}
    imp = _params(impute_cmd)
    given = impute_cmd.make_context("impute", ["m.csv", "-o", "o.csv"]).params
    got = {f: (imp[p].opts, imp[p].secondary_opts, given[p])
           for f, p in OPTION_FIELDS[ImputeTask].items()}
    assert got == {"k": (["-k", "--k"], [], 4),
                   "max_iterations": (["--max-iterations"], [], 10),
                   "time_limit": (["--time-limit"], [], None),
                   "e_step": (["--e-step"], [], "mpe"),
                   "imputation": (["--imputation"], [], "marginal"),
                   "accumulate": (["--accumulate"], ["--no-accumulate"], False),
                   "search_seconds": (["--search-seconds"], [], None),
                   "search_iterations": (["--search-iterations"], [], None),
                   "batch_size": (["--batch-size"], [], 20_000)}
    tree = ast.parse((CLI / "impute.py").read_text())
    flags = {f for p in OPTION_FIELDS[ImputeTask].values() for f in imp[p].opts}
    by_hand = {a.value for n in ast.walk(tree) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr == "option"
               for a in n.args if isinstance(a, ast.Constant)} & flags
    assert not by_hand, f"impute.py declares {by_hand} by hand"
    for args, needle in ((["--max-iterations", "0"], "'--max-iterations': 0 is not in"),
                         (["--batch-size", "0"], "'--batch-size': 0 is not in"),
                         (["--search-seconds", "0"], "'--search-seconds': 0.0 is not in"),
                         (["--time-limit", "inf"], "--time-limit: Input should be a finite")):
        res = CliRunner().invoke(impute_cmd, ["m.csv", "--serial", "-o", "o.csv", *args])
        assert res.exit_code != 0
        assert needle in res.output or needle in str(res.exception), (args, res.output)


@pytest.mark.parametrize("args, message", [
    (["--seconds", "0"], "Invalid value for '--seconds': 0.0 is not in the range x>0"),
    (["--seconds", "-1"], "Invalid value for '--seconds': -1.0 is not in the range x>0"),
    (["--iterations", "0"], "Invalid value for '--iterations': 0 is not in the range x>=1"),
    (["--iterations", "1.5"], "Invalid value for '--iterations': '1.5' is not a valid"),
    (["-a", "kg", "-k", "0"], "Invalid value for '-k': 0 is not in the range x>=1"),
    (["--seconds", "inf"], "--seconds: Input should be a finite number"),
    (["--checkpoints", "x"], "--checkpoints 'x': 'x' is not a positive number"),
])
def test_bad_search_and_budget_values_name_the_flag(args, message, tmp_path):
    """The fields' lower bounds (PositiveInt, positive finite seconds) are click's ranges,
    refused while the command line is parsed; the model's other checks name the flag."""
    res = CliRunner().invoke(learn_cmd, ["nltcs", "--serial", "-q", "-o",
                                         str(tmp_path / "r.json"), *args])
    assert res.exit_code != 0
    assert message in res.output or message in str(res.exception), res.output
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("given, budget, rest", [
    ({}, {"seconds": 10.0, "checkpoints": (1.0, 10.0)}, {}),
    ({"seconds": 30.0}, {"seconds": 30.0, "checkpoints": (1.0, 10.0, 30.0)}, {}),
    ({"iterations": 500}, {"iterations": 500, "iteration_checkpoints": (1, 10, 100, 500)}, {}),
    ({"iterations": 500, "checkpoints": "1,20,400,900"},
     {"iterations": 500, "iteration_checkpoints": (1, 20, 400, 500)}, {}),
    ({"seconds": 5.0, "checkpoints": "0.5, 2,60"},
     {"seconds": 5.0, "checkpoints": (0.5, 2.0, 5.0)}, {}),
    ({"algorithm": "kg", "k": 3, "iterations": 20, "params": ("max_parents=2",)},
     {"iterations": 20, "iteration_checkpoints": (1, 10, 20)},
     {"algorithm": "kg", "k": 3, "params": {"max_parents": 2}}),
])
def test_search_spec_of_learns_command_lines(given, budget, rest):
    """Worked out by hand from the rules (10 s when neither budget is given; default
    checkpoints 1, 10, 60, 600, 3600 s or powers of ten below the budget; given ones
    below the budget, the budget last)."""
    kw = {"algorithm": "asobs", "k": None, "seconds": None, "iterations": None,
          "checkpoints": None}
    kw.update({k: v for k, v in given.items() if k != "params"})
    got = search_spec(given.get("params", ()), **kw)
    assert got.budget == BudgetSpec(**budget)
    assert (got.algorithm, got.k) == (rest.get("algorithm", "asobs"), rest.get("k"))
    assert {k: v for k, v in got.params.items() if k in rest.get("params", {})} == \
        rest.get("params", {})


def test_search_spec_rules():
    """Worked out by hand: neither budget is 10 s, checkpoints below it then the budget."""
    kw = {"algorithm": "asobs", "k": None, "seconds": None, "iterations": None}
    assert search_spec((), checkpoints=None, **kw).budget.seconds == 10.0
    b = search_spec((), checkpoints="3, 1,50", **{**kw, "iterations": 40}).budget
    assert b.iteration_checkpoints == (1, 3, 40) and b.seconds is None
    with pytest.raises(InvalidConfigError, match="whole number"):
        search_spec((), checkpoints="2.5", **{**kw, "iterations": 40})


def test_the_iteration_budget_cache_rule_is_stated_once():
    """An independence cache with no budget of its own under an iteration budget alone
    explores ITERATION_CACHE_SCORES exact scores per variable: the grid YAML and the
    command line both through cache.spec.with_iteration_budget."""
    from bnsl_dist.pipeline.config import GridConfig

    its, secs = BudgetSpec(iterations=50), BudgetSpec(seconds=2.0)
    assert cache_spec_with({}, budget=its).scores_per_variable == ITERATION_CACHE_SCORES
    assert cache_spec_with({}, budget=secs).seconds_per_variable == 1.0
    assert cache_spec_with({"cache_scores_per_variable": 7}, budget=its).scores_per_variable == 7
    assert cache_spec_with({"cache_method": "sequential"}, budget=its).scores_per_variable is None
    assert with_iteration_budget({"path": "c.jkl"}, [its]) == {"path": "c.jkl"}
    grid = {"name": "g", "datasets": [{"name": "nltcs"}], "cache": {},
            "algorithms": [{"name": "asobs"}]}
    assert GridConfig.model_validate({**grid, "budget": {"iterations": 5}}) \
        .cache.scores_per_variable == ITERATION_CACHE_SCORES
    assert GridConfig.model_validate({**grid, "budget": {"seconds": 5}}) \
        .cache.scores_per_variable is None


def _command_modules() -> set[str]:
    return {p.stem for p in CLI.glob("*.py") if not p.name.startswith("_")}


def _imported_commands(source: str, commands: set[str]) -> set[str]:
    """The command modules of ``bnsl_dist.cli`` that ``source`` imports."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1:  # from .data import x / from . import data
                mod = f"bnsl_dist.cli.{mod}" if mod else "bnsl_dist.cli"
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n.split(".")[2] for n in names
                if n.startswith("bnsl_dist.cli.") and n.split(".")[2] in commands}
    return out


def test_no_command_module_imports_another():
    commands = _command_modules()
    found = {name: imported for name in sorted(commands)
             if (imported := _imported_commands((CLI / f"{name}.py").read_text(),
                                                commands) - {name})}
    assert not found, f"command modules importing other commands (move the shared " \
                      f"piece into a cli/_ module): {found}"


def test_the_import_rule_sees_every_spelling():
    commands = {"data", "infer", "learn"}
    for src in ("from bnsl_dist.cli.data import load_data",
                "import bnsl_dist.cli.infer",
                "from bnsl_dist.cli import learn",
                "from .data import load_data",
                "from . import infer",
                "def f():\n    from bnsl_dist.cli.data import load_data\n"):
        assert _imported_commands(src, commands), src
    assert not _imported_commands("from bnsl_dist.cli._inputs import load_data\n"
                                  "from bnsl_dist.cli._common import echo_json", commands)
