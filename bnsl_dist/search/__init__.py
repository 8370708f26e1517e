"""Structure optimisation: the anytime Optimizer contract and every registered optimizer.

Importing this package imports every optimizer module so the registry is complete.
"""

# Optimizer modules register themselves on import: this list is the one place a new
# optimizer module is named (its keyword-only __init__ declares its parameters).
import bnsl_dist.search.exact.astar  # noqa: F401,E402
import bnsl_dist.search.exact.dp  # noqa: F401,E402
import bnsl_dist.search.exact.ilp  # noqa: F401,E402
import bnsl_dist.search.exact.twilp  # noqa: F401,E402
import bnsl_dist.search.local  # noqa: F401,E402
import bnsl_dist.search.ordering  # noqa: F401,E402
import bnsl_dist.search.treewidth  # noqa: F401,E402
from bnsl_dist.search.base import (
    DEFAULT_CHECKPOINTS,
    AnytimeTrace,
    Budget,
    Incumbent,
    Optimizer,
    Stopwatch,
    get_optimizer,
    make_optimizer,
    optimizer_info,
    optimizer_names,
    register,
)

__all__ = [
    "AnytimeTrace",
    "Budget",
    "DEFAULT_CHECKPOINTS",
    "Incumbent",
    "Optimizer",
    "Stopwatch",
    "get_optimizer",
    "make_optimizer",
    "optimizer_info",
    "optimizer_names",
    "register",
]
