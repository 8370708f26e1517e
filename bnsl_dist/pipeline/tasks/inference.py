"""The inference task (Scanagatta et al. 2018, §6.3; Scanagatta et al. 2018, k-MAX,
§5, Figs. 4-5): a search (``run_cell``), then the inference study on the network it
learned (:func:`study`): its CPTs fitted on the cell's data, the data set's queries
answered, and in one cell of a data set with a known network (the reference learner's;
without one, the grid's first model) the true network's answers."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.pipeline.specs import DataRef, InferenceSettings, shared_data_dir
from bnsl_dist.pipeline.tasks import GridTask, register_task
from bnsl_dist.search.base import Incumbent
from bnsl_dist.search.spec import SearchSpec

if TYPE_CHECKING:
    from bnsl_dist.pipeline.cell import Cell
    from bnsl_dist.pipeline.config import GridConfig

__all__ = ["InferenceConfig", "InferenceSpec", "InferenceTask", "study", "outputs",
           "true_network", "true_network_name", "grid_tasks", "check_grid", "GRID_SECTION"]


class InferenceConfig(InferenceSettings):
    """The ``inference`` section of an inference grid (Scanagatta et al. 2018, §6.3;
    :mod:`bnsl_dist.inference.study`): each cell learns its model, fits CPTs (Dirichlet
    ``alpha``, BDeu-spread) and answers ``queries`` P(e) queries of ``evidence_vars``
    random variables in random states and, on data sets sampled from a known network,
    ``marginal_queries`` marginals of its leaves. Queries are drawn from a stream keyed
    by the data set, split and seed, so every model of one data set answers the same
    ones.

    ``reference`` is the label of the unbounded learner: on real data its model is the
    assumed ground truth; on data of a known network its cell also answers the queries
    on the true network (exact when its junction tree fits in ``memory_gib``, else
    ``truth_pe_samples`` / ``truth_samples`` likelihood-weighting particles; a
    ``truth_pe_samples`` of 0 skips P(e) on known networks, as the paper did). Learned
    models whose junction tree exceeds ``memory_gib`` get ``lw_samples`` particles per
    query.

    Without ``reference`` (k-MAX's Figs. 4-5: bounded models only) the true network is
    the only reference: every data set must have one, and the cell of the grid's first
    algorithm at its first treewidth answers its queries (once per data set, split and
    seed)."""

    reference: str | None = None

    @model_validator(mode="after")
    def _some_query(self) -> InferenceConfig:
        if self.queries == 0 and self.marginal_queries == 0:
            raise ValueError("an inference study needs 'queries' or 'marginal_queries' > 0")
        return self


#: The grid's section of this kind (``inference:``).
GRID_SECTION = InferenceConfig


def check_grid(grid: GridConfig) -> None:
    """An inference grid's reference learner is one of its labels, and unbounded; a
    grid without one has a known network for each of its data sets and answers its P(e)
    queries on it."""
    inf = grid.section("inference")
    assert isinstance(inf, InferenceConfig)  # GridConfig's validator: the kind's section
    labels = [a.display for a in grid.algorithms]
    if inf.reference is None:
        if inf.queries > 0 and inf.truth_pe_samples == 0:
            raise ValueError("inference without a reference learner scores P(e) against "
                             "the true networks: truth_pe_samples must be > 0")
        for d in grid.datasets:
            if d.path is not None or true_network_name(d.name) is None:
                raise ValueError(f"inference without a reference learner needs data sets "
                                 f"sampled from a known network; {d.name!r} is not")
        return
    if inf.reference not in labels:
        raise ValueError(f"inference.reference names {inf.reference!r}, which is not an "
                         f"algorithm label of this grid ({labels})")
    if grid.algorithm(inf.reference).treewidths(grid) != (None,):
        raise ValueError(f"inference.reference {inf.reference!r} must be an unbounded "
                         f"learner (no treewidth k): it is the assumed ground truth")


class InferenceSpec(InferenceSettings):
    """The inference study's settings of one cell
    (:class:`InferenceConfig`); ``reference`` marks the unbounded learner's cell, which
    also answers the queries on the true network when the data set has one; ``truth``
    marks the cell that does so in a grid without a reference learner."""

    reference: bool = False
    truth: bool = False

    @property
    def answers_truth(self) -> bool:
        """Whether this cell answers the true network's queries (on a known network)."""
        return self.reference or self.truth

    @model_serializer(mode="wrap")
    def _no_false_truth(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``truth`` left out when False: cells (and keys) of grids with a reference
        learner stay those of earlier versions."""
        out: dict[str, Any] = handler(self)
        if not self.truth:
            out.pop("truth", None)
        return out


@register_task
class InferenceTask(GridTask):
    """A search, then the inference study on the network it learned (Scanagatta et al.
    2018 §6.3)."""

    kind: Literal["inference"] = "inference"
    search: SearchSpec
    inference: InferenceSpec


def grid_tasks(grid: GridConfig, label: str, search: SearchSpec,
               holdout: DataRef | None) -> list[dict[str, Any]]:
    """The tasks of an inference grid's cells of one algorithm entry and treewidth: the
    search and the grid's study, the reference learner's (``label``) marked."""
    inf = grid.section("inference")
    if not isinstance(inf, InferenceConfig):  # pragma: no cover - GridConfig's validator
        raise DataError("an inference grid needs its inference section")
    if holdout is not None:
        raise InvalidConfigError("held-out scoring (a screening grid with a test split) "
                                 "is for search grids, not kind: inference")
    first = grid.algorithms[0]
    truth = inf.reference is None and label == first.display \
        and search.k == first.treewidths(grid)[0]
    study = InferenceSpec(reference=label == inf.reference, truth=truth,
                          **inf.model_dump(exclude={"reference"}))
    return [{"kind": "inference", "search": search, "inference": study}]


def true_network_name(dataset: str) -> str | None:
    """The name of the network a registered data set was sampled from, else None."""
    from bnsl_dist.datasets.catalog import SampledDataset, load_catalog

    cat = load_catalog()
    if dataset not in cat.datasets:
        return None
    spec = cat.dataset(dataset).spec
    return spec.network if isinstance(spec, SampledDataset) else None


@functools.lru_cache(maxsize=2)
def true_network(ref: DataRef) -> BayesianNetwork | None:
    """The network a registered data set was sampled from (r0-r14, ...), else None."""
    if ref.file is not None:
        return None
    from bnsl_dist.datasets.catalog import load_network

    name = true_network_name(ref.name)
    return None if name is None else load_network(name, mirror=shared_data_dir())


def outputs(cell: Cell, data: CategoricalData, best: Incumbent,
            order: tuple[int, ...] | None) -> dict[str, Any]:
    """The inference cell's result column (``run_cell`` calls it on the best network of
    the search): :func:`study`."""
    return {"inference": study(cell, data, best, order)}


def study(cell: Cell, data: CategoricalData, best: Incumbent,
          order: tuple[int, ...] | None) -> dict[str, Any]:
    """The inference study of one cell (Scanagatta et al. 2018, §6.3): fit the CPTs of
    the best DAG, answer the data set's queries (the same in every cell of the data set)
    and, in the reference learner's cell of a data set with a known network, the true
    network's answers (the first model's cell in a grid without a reference learner).
    Stored: the queries (``evidence``: [variable, state] pairs per
    P(e) query; ``marginal_vars``), the answers and timings
    (:class:`~bnsl_dist.inference.study.Answers`), ``truth`` (reference cell, known
    network). Errors against the reference are computed from the records
    (:mod:`bnsl_dist.reporting.inference`): one reference computation per data set, no
    model learned twice, and every cell independent of the others."""
    from bnsl_dist.inference.study import answer_queries, query_variables, random_evidence
    from bnsl_dist.model.fit import fit_cpts

    spec = cell.inference
    if spec is None:  # pragma: no cover - Cell's validator
        raise DataError("an inference cell needs its inference settings")
    t0 = time.perf_counter()
    truth = true_network(cell.data) if cell.data is not None else None
    if truth is not None and tuple(truth.arities) != tuple(data.arities):
        raise DataError(f"{cell.dataset}: the data's arities differ from its network's")
    rng = np.random.default_rng(cell.data_seed_sequence("inference-queries"))
    n_pe = spec.queries if truth is None or spec.truth_pe_samples > 0 else 0
    evidence = random_evidence(data.arities, n_pe, spec.evidence_vars, rng)
    query = [] if truth is None else query_variables(truth, spec.marginal_queries, rng)
    net = fit_cpts(best.dag, data, alpha=spec.alpha)
    answers = answer_queries(net, order, evidence, query, memory_limit=spec.memory_limit,
                             n_samples=spec.lw_samples, rng=cell.seed_sequence().spawn(1)[0])
    out: dict[str, Any] = {
        "reference": spec.reference, "known_network": truth is not None,
        "evidence_vars": spec.evidence_vars, "queries": int(len(evidence)),
        "evidence": [[[int(v), int(row[v])] for v in np.flatnonzero(row >= 0)]
                     for row in evidence],
        "marginal_vars": [int(v) for v in query], **answers.to_json_dict()}
    if spec.answers_truth and truth is not None:
        t1 = time.perf_counter()
        tr = answer_queries(truth, None, evidence, query, memory_limit=spec.memory_limit,
                            n_samples=spec.truth_pe_samples or spec.truth_samples,
                            marginal_samples=spec.truth_samples,
                            rng=cell.data_seed_sequence("inference-truth"))
        out["truth"] = {**tr.to_json_dict(), "seconds": time.perf_counter() - t1}
    out["seconds"] = time.perf_counter() - t0
    return out
