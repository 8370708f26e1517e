"""Ordering-based search without a treewidth bound: OBS, ASOBS, ASOBS-ENT, the window
search (Win-ASOBS), the memetic search over orders and greedy hill climbing with tabu and restarts."""

from bnsl_dist.search.ordering.asobs import ASOBS, ASOBSEnt, WinASOBS, WinASOBSEnt
from bnsl_dist.search.ordering.hillclimb import HillClimbTabu
from bnsl_dist.search.ordering.memetic import Memetic
from bnsl_dist.search.ordering.obs import OBS
from bnsl_dist.search.ordering.samplers import (
    entropy_orders,
    entropy_weights,
    uniform_orders,
    weighted_orders,
)

__all__ = ["ASOBS", "ASOBSEnt", "HillClimbTabu", "Memetic", "OBS", "WinASOBS", "WinASOBSEnt",
           "entropy_orders", "entropy_weights", "uniform_orders", "weighted_orders"]
