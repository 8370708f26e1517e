"""Export a :class:`BayesianNetwork` to pgmpy and networkx objects (and back from pgmpy).

Layouts. Ours: ``cpts[v]`` has shape ``(q, r)``, row ``j`` is the mixed-radix index over
the parents sorted ascending with the *first* parent varying fastest. pgmpy's
``TabularCPD``: ``values`` has shape ``(r, q)`` and its columns enumerate the evidence
configurations with the *last* evidence variable varying fastest (like
``itertools.product``). With the evidence listed in our (ascending) parent order, the
conversion is a reshape to ``(r_Pm, ..., r_P1, r)``, a full transpose to
``(r, r_P1, ..., r_Pm)`` and a reshape to ``(r, q)``.

pgmpy is an optional dependency: it is imported only when these functions are called.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.exceptions import DataError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.network import BayesianNetwork

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["to_pgmpy", "from_pgmpy", "to_networkx", "cpt_to_pgmpy_values",
           "cpt_from_pgmpy_values"]


def cpt_to_pgmpy_values(cpt: NDArray[np.float64], parent_arities: list[int]) -> NDArray[np.float64]:
    """Our ``(q, r)`` CPT as pgmpy's ``(r, q)`` values, evidence in the same parent order."""
    r = cpt.shape[1]
    shape = tuple(reversed(parent_arities)) + (r,)
    return np.asarray(cpt).reshape(shape).T.reshape(r, -1)


def cpt_from_pgmpy_values(values: NDArray[Any], parent_arities: list[int]) -> NDArray[np.float64]:
    """Inverse of :func:`cpt_to_pgmpy_values`."""
    r = values.shape[0]
    shape = (r,) + tuple(parent_arities)
    return np.asarray(values, dtype=np.float64).reshape(shape).T.reshape(-1, r)


def to_pgmpy(net: BayesianNetwork) -> Any:
    """A ``pgmpy.models.DiscreteBayesianNetwork`` with one ``TabularCPD`` per variable.

    Evidence lists follow our parent order (ascending index); state names are the
    network's labels. Isolated variables are added as nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.graph import DAG
    >>> from bnsl_dist.model import BayesianNetwork
    >>> net = BayesianNetwork(DAG.from_parents([(), (0,)], ["A", "B"]), (("a0", "a1"),
    ...     ("b0", "b1")), (np.array([[0.3, 0.7]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    >>> m = to_pgmpy(net)                                        # doctest: +SKIP
    >>> m.get_cpds("B").values.tolist()                          # doctest: +SKIP
    [[0.9, 0.2], [0.1, 0.8]]
    """
    with warnings.catch_warnings():  # pgmpy's own deprecation notices on import
        warnings.simplefilter("ignore", FutureWarning)
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

    names = net.names
    ar = net.arities
    model = DiscreteBayesianNetwork()
    model.add_nodes_from(names)
    model.add_edges_from([(names[p], names[v]) for p, v in net.dag.arcs()])
    cpds = []
    for v in range(net.n_vars):
        ps = list(net.dag.parents[v])
        par = [int(ar[p]) for p in ps]
        values = cpt_to_pgmpy_values(net.cpts[v], par)
        state_names = {names[v]: list(net.states[v])}
        state_names.update({names[p]: list(net.states[p]) for p in ps})
        cpds.append(TabularCPD(variable=names[v], variable_card=int(ar[v]), values=values,
                               evidence=[names[p] for p in ps] or None,
                               evidence_card=par or None, state_names=state_names))
    model.add_cpds(*cpds)
    return model


def from_pgmpy(model: Any) -> BayesianNetwork:
    """A :class:`BayesianNetwork` from a pgmpy discrete Bayesian network.

    Variables keep pgmpy's node order; each CPT is reordered to our layout whatever
    the evidence order of pgmpy's ``TabularCPD``.
    """
    names = [str(x) for x in model.nodes()]
    idx = {s: i for i, s in enumerate(names)}
    parents: list[list[int]] = [[] for _ in names]
    cpd_of = {}
    for cpd in model.get_cpds():
        cpd_of[str(cpd.variable)] = cpd
    states: list[tuple[str, ...]] = []
    for s in names:
        if s not in cpd_of:
            raise DataError(f"pgmpy model has no CPD for {s!r}")
        cpd = cpd_of[s]
        parents[idx[s]] = [idx[str(e)] for e in cpd.variables[1:]]
        states.append(tuple(str(x) for x in cpd.state_names[cpd.variable]))
    dag = DAG.from_parents(parents, names)
    cpts = []
    for s in names:
        cpd = cpd_of[s]
        ev = [str(e) for e in cpd.variables[1:]]
        cards = [int(c) for c in cpd.cardinality[1:]]
        vals = np.asarray(cpd.get_values(), dtype=np.float64)  # (r, q), last evidence fastest
        r = vals.shape[0]
        full = vals.reshape((r,) + tuple(cards))
        # reorder evidence axes to ascending parent index, then to our layout
        order = sorted(range(len(ev)), key=lambda i: idx[ev[i]])
        full = full.transpose([0] + [1 + i for i in order])
        cpts.append(cpt_from_pgmpy_values(full.reshape(r, -1), [cards[i] for i in order]))
        for i in order:
            e = ev[i]
            expected = tuple(str(x) for x in cpd.state_names[e])
            if expected != states[idx[e]]:
                raise DataError(f"pgmpy model: CPD of {s!r} names the states of {e!r} "
                                f"{expected}, but its own CPD names them {states[idx[e]]}")
    return BayesianNetwork(dag=dag, states=tuple(states), cpts=tuple(cpts))


def to_networkx(net: BayesianNetwork | DAG) -> nx.DiGraph:
    """A ``networkx.DiGraph`` over the variable names (arcs parent -> child).

    For a network, each node carries ``states`` (labels) and ``cpt`` (our layout) and
    ``parents`` (the CPT's parent order) attributes.
    """
    import networkx as nx  # not at the top: start-up (bnsl_dist.pipeline imports this module)

    dag = net.dag if isinstance(net, BayesianNetwork) else net
    g = nx.DiGraph()
    for v, s in enumerate(dag.names):
        attrs: dict[str, Any] = {"parents": [dag.names[p] for p in dag.parents[v]]}
        if isinstance(net, BayesianNetwork):
            attrs["states"] = list(net.states[v])
            attrs["cpt"] = net.cpts[v]
        g.add_node(s, **attrs)
    g.add_edges_from((dag.names[p], dag.names[v]) for p, v in dag.arcs())
    return g
