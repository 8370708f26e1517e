"""strongly_connected_components against networkx's components and a naive ordering:
repeatedly the component with the smallest member among those whose parents are placed."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.graph import strongly_connected_components


def _naive(parents):
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parents)))
    g.add_edges_from((p, v) for v, ps in enumerate(parents) for p in ps)
    comps = [sorted(c) for c in nx.strongly_connected_components(g)]
    out, placed = [], set()
    while comps:
        ready = [c for c in comps
                 if all(p in placed or p in c for v in c for p in parents[v])]
        nxt = min(ready, key=lambda c: c[0])
        out.append(nxt)
        placed.update(nxt)
        comps.remove(nxt)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_components_and_order_match_the_naive_ordering(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    density = float(rng.uniform(0.0, 0.25))
    parents = [sorted(int(u) for u in range(n) if u != v and rng.random() < density)
               for v in range(n)]
    assert strongly_connected_components(parents) == _naive(parents)


def test_independent_components_come_smallest_member_first():
    # 3 -> 2 and 1 -> 0, two independent chains: the order interleaves by smallest member.
    assert strongly_connected_components([[1], [], [3], []]) == [[1], [0], [3], [2]]
    assert strongly_connected_components([]) == []
