"""A cell's task, one module per kind, and the registry every other module reads them from.

Each module of this package registers its task models (:func:`register_task`, keyed by
the model's ``kind``), each with its spec and ``run(task, data, cache, rng)`` returning a
typed result: :mod:`~bnsl_dist.pipeline.tasks.search` (one optimizer on the cache),
:mod:`~bnsl_dist.pipeline.tasks.inference` (a search, then the inference study),
:mod:`~bnsl_dist.pipeline.tasks.sem` (SEM-kMAX: the impute command's task and the SEM
grid cell's) and :mod:`~bnsl_dist.pipeline.tasks.within` (the time-limited learn). The
cell's union of tasks (:data:`bnsl_dist.pipeline.cell.Task`) is made of
:func:`task_models`, which imports every module here: no other module lists the kinds.

A **grid kind** (``kind:`` of a grid YAML) is the module of that name that declares how
the grid's cells of the kind are made (``grid_tasks``); it may also declare its YAML
section (``GRID_SECTION``: the model of the grid's section named after the kind), check
a grid (``check_grid``), adjust a grid's input before it is validated (``grid_input``),
give ``run_cell`` its hooks (``outputs``, ``run_cell``) and name its grid axes
(:class:`GridTask`). :class:`~bnsl_dist.pipeline.config.GridConfig`,
:func:`~bnsl_dist.pipeline.grid.expand_grid`, ``grid status --by``, ``run_cell`` and the
replay model's twins read them, so that a new kind is its task module, its result column
and its report (docs/ARCHITECTURE.md "What a change touches")."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from bnsl_dist._spec import Spec

__all__ = ["GridTask", "task_axes", "register_task", "task_models", "grid_kinds",
           "grid_kind"]

M = TypeVar("M", bound=type[BaseModel])

#: kind -> its task model, in the order the modules registered them.
_TASKS: dict[str, type[BaseModel]] = {}


class GridTask(Spec):
    """The task of a grid kind. ``AXES``: the names of the kind's own grid axes (what
    varies between the cells of one algorithm entry, treewidth and seed: a SEM cell's
    missing rate and budget scale), whose values :meth:`axes` gives; ``grid status --by``
    counts by them, and a record keeps each in its kind's result column under the same
    name (docs/RECORDS.md)."""

    AXES: ClassVar[tuple[str, ...]] = ()

    def axes(self) -> dict[str, Any]:
        """The task's value on each of :attr:`AXES`."""
        return {}


def task_axes(task: object) -> dict[str, Any]:
    """The grid axes of ``task`` (none for a task of no grid kind)."""
    return task.axes() if isinstance(task, GridTask) else {}


def register_task(model: M) -> M:
    """Add the task model ``model`` to the registry under its ``kind`` (the default of
    its ``kind`` field, a one-value ``Literal``); a module of this package calls it on
    each task model it defines or runs (a class decorator).

    Raises
    ------
    ValueError
        No ``kind`` default, or another model registered under it.
    """
    cls: type[BaseModel] = model
    field = cls.model_fields.get("kind")
    kind = None if field is None else field.default
    if not isinstance(kind, str):
        raise ValueError(f"{model.__name__}: a task model needs a 'kind' with a default")
    if _TASKS.get(kind, model) is not model:
        raise ValueError(f"task kind {kind!r} registered twice")
    _TASKS[kind] = model
    return model


@functools.cache
def _modules() -> dict[str, ModuleType]:
    """Every module of this package, imported (each registers its task models)."""
    return {m.name: importlib.import_module(f"{__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)}


def task_models() -> dict[str, type[BaseModel]]:
    """Every task kind and its model (the cell's union of tasks)."""
    _modules()
    return dict(_TASKS)


def grid_kinds() -> dict[str, ModuleType]:
    """The grid kinds: name -> the task module of that name, which makes the kind's
    tasks of a grid (``grid_tasks``)."""
    return {name: mod for name, mod in _modules().items() if hasattr(mod, "grid_tasks")}


def grid_kind(kind: str, name: str) -> Any:
    """What the task module of the grid kind ``kind`` declares as ``name`` (None when it
    declares none, or ``kind`` is no grid kind): ``grid_tasks``, ``GRID_SECTION``,
    ``check_grid``, ``grid_input``, ``run_cell``, ``outputs``."""
    mod = grid_kinds().get(kind)
    return None if mod is None else getattr(mod, name, None)
