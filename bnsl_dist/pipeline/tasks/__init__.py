"""A cell's task, one module per kind beside the cell's union of them
(:data:`bnsl_dist.pipeline.cell.Task`), each with its spec and ``run(task, data, cache,
rng)`` returning a typed result: :mod:`~bnsl_dist.pipeline.tasks.search` (one optimizer
on the cache), :mod:`~bnsl_dist.pipeline.tasks.inference` (a search, then the inference
study), :mod:`~bnsl_dist.pipeline.tasks.sem` (SEM-kMAX: the impute command's task and
the SEM grid cell's) and :mod:`~bnsl_dist.pipeline.tasks.within` (the time-limited
learn).

The task of a grid kind (``kind:`` of a grid YAML) is in the module of that name, which
declares how the grid's cells of the kind are made (``grid_tasks``) and its grid axes
(:class:`GridTask`): :func:`bnsl_dist.pipeline.grid.expand_grid`, ``grid status --by``
and the replay model's twins read them, so that a new axis of a kind is its YAML field,
its task module and its report (docs/ARCHITECTURE.md "What a change touches")."""

from __future__ import annotations

from typing import Any, ClassVar

from bnsl_dist._spec import Spec

__all__ = ["GridTask", "task_axes"]


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
