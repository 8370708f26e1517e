"""The anytime optimizer contract: Budget, Incumbent, AnytimeTrace, the registry.

An optimizer's ``run(cache, budget, rng)`` yields only strictly better incumbents, each
with the seconds elapsed on its own clock; it stops when the budget ends or when it has
proved optimality. Hyper-parameters are keyword-only ``__init__`` arguments stored
unchanged; ``__init__`` does no work and no state carries over between runs.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import TypeAdapter, ValidationError

from bnsl_dist._spec import misplaced_bool
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG

__all__ = [
    "Budget",
    "DEFAULT_ALGORITHM",
    "Stopwatch",
    "Incumbent",
    "AnytimeTrace",
    "Optimizer",
    "Hyperparameter",
    "OptimizerInfo",
    "register",
    "optimizer_info",
    "get_optimizer",
    "optimizer_names",
    "make_optimizer",
    "optimizer_stream",
    "DEFAULT_CHECKPOINTS",
]

#: The search ``learn`` runs without ``--algorithm``, and the search stage of
#: ``learn_within`` (``learn --time-limit``): the strongest one measured at equal seconds
#: on caches of 20 to 839 variables (workflows/benchmarks/minobs.py).
DEFAULT_ALGORITHM = "memetic"

#: Checkpoint budgets (seconds) at which distributed runs report the best DAG.
DEFAULT_CHECKPOINTS: tuple[float, ...] = (1.0, 10.0, 60.0, 600.0, 3600.0)


@dataclass(frozen=True, slots=True)
class Budget:
    """Seconds and/or iterations; whichever ends first stops the run.

    An iteration is the optimizer's natural unit (one sampled order, one restart, one
    node expansion batch...). Iteration budgets make runs reproducible.
    """

    seconds: float | None = None
    max_iterations: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is None and self.max_iterations is None:
            raise InvalidConfigError("a budget needs seconds or max_iterations")
        # the loops draw and count whole iterations and compare seconds: a float count
        # (1e3) failed only near the end of the run, a string at the first comparison
        if self.seconds is not None and (isinstance(self.seconds, bool) or not isinstance(
                self.seconds, int | float | np.integer | np.floating)):
            raise InvalidConfigError(f"budget seconds must be a number, got {self.seconds!r}")
        if self.max_iterations is not None and (isinstance(self.max_iterations, bool) or
                                                not isinstance(self.max_iterations,
                                                               int | np.integer)):
            raise InvalidConfigError(f"budget max_iterations must be an integer, got "
                                     f"{self.max_iterations!r}")
        if self.seconds is not None and not self.seconds > 0:
            raise InvalidConfigError(f"budget seconds must be positive, got {self.seconds}")
        if self.max_iterations is not None and self.max_iterations < 1:
            raise InvalidConfigError(f"budget iterations must be >= 1, got {self.max_iterations}")

    def stopwatch(self) -> Stopwatch:
        return Stopwatch(self)


class Stopwatch:
    """Tracks a run's elapsed time and iterations against its budget."""

    __slots__ = ("budget", "start", "iterations", "_deadline")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.start = time.perf_counter()
        self.iterations = 0
        self._deadline = (self.start + budget.seconds) if budget.seconds is not None else None

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        """Seconds left (inf when only iterations bound the run)."""
        if self._deadline is None:
            return float("inf")
        return max(0.0, self._deadline - time.perf_counter())

    def tick(self, n: int = 1) -> None:
        self.iterations += n

    def resume(self, iterations: int, elapsed: float) -> Stopwatch:
        """As if ``iterations`` and ``elapsed`` seconds were already spent (a run
        continued in epochs); returns itself."""
        self.iterations = iterations
        self.start -= elapsed
        if self._deadline is not None:
            self._deadline -= elapsed
        return self

    def done(self) -> bool:
        if self.budget.max_iterations is not None and self.iterations >= self.budget.max_iterations:
            return True
        return self._deadline is not None and time.perf_counter() >= self._deadline

    def iterations_left(self) -> int | None:
        if self.budget.max_iterations is None:
            return None
        return max(0, self.budget.max_iterations - self.iterations)


@dataclass(frozen=True, slots=True)
class Incumbent:
    """A DAG found during a run, better than every earlier one of that run."""

    elapsed: float
    score: float
    dag: DAG
    iterations: int = 0
    bound: float | None = None  # a proven upper bound on the optimum (exact solvers)
    info: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def gap(self) -> float | None:
        """Relative gap (bound - score) / |score|, when a bound is known."""
        if self.bound is None:
            return None
        return (self.bound - self.score) / max(abs(self.score), 1e-12)


@dataclass
class AnytimeTrace:
    """The incumbents of one run (or the merge of several), in time order."""

    incumbents: list[Incumbent] = field(default_factory=list)
    total_iterations: int = 0
    total_seconds: float = 0.0

    def append(self, inc: Incumbent) -> None:
        self.incumbents.append(inc)

    @property
    def best(self) -> Incumbent | None:
        return max(self.incumbents, key=lambda i: i.score, default=None)

    def best_at(self, t: float) -> Incumbent | None:
        """The best incumbent found within ``t`` seconds (None if none yet)."""
        cands = [i for i in self.incumbents if i.elapsed <= t]
        return max(cands, key=lambda i: i.score, default=None)

    def best_at_iteration(self, it: int) -> Incumbent | None:
        cands = [i for i in self.incumbents if i.iterations <= it]
        return max(cands, key=lambda i: i.score, default=None)

    def within(self, budget: Budget) -> AnytimeTrace:
        """The incumbents found within ``budget`` (an optimizer checks its clock between
        steps, so the last step may end past the budget: what it found then is not
        reported, and the best of the result is the best at the budget)."""
        s, it = budget.seconds, budget.max_iterations
        kept = [i for i in self.incumbents
                if (s is None or i.elapsed <= s) and (it is None or i.iterations <= it)]
        return AnytimeTrace(kept, self.total_iterations, self.total_seconds)

    @classmethod
    def merge(cls, traces: Sequence[AnytimeTrace]) -> AnytimeTrace:
        """Several runs (one per seed) as one trace: ``best_at(t)`` is the best over the
        runs within ``t`` (ties: the earlier run). Each incumbent's ``info["run"]`` is
        the index of its run; iterations add up, seconds are the longest run's."""
        incs = [dataclasses.replace(i, info={**i.info, "run": r})
                for r, tr in enumerate(traces) for i in tr.incumbents]
        return cls(incs, sum(t.total_iterations for t in traces),
                   max((t.total_seconds for t in traces), default=0.0))

    @classmethod
    def collect(cls, stream: Iterator[Incumbent], on_incumbent: Callable[[Incumbent], None]
                | None = None) -> AnytimeTrace:
        """Drain an optimizer's stream (doing nothing else while it runs).

        ``total_iterations`` is the generator's return value when it gives one (the
        iterations actually run), else the iteration of the last improvement.
        """
        tr = cls()
        t0 = time.perf_counter()
        total: Any = None
        while True:
            try:
                inc = next(stream)
            except StopIteration as stop:
                total = stop.value
                break
            tr.append(inc)
            if on_incumbent is not None:
                on_incumbent(inc)
        tr.total_seconds = time.perf_counter() - t0
        last = max((i.iterations for i in tr.incumbents), default=0)
        tr.total_iterations = int(total) if isinstance(total, int | np.integer) else last
        return tr


@runtime_checkable
class Optimizer(Protocol):
    """Structure optimizer over a parent-set cache."""

    name: ClassVar[str]
    exact: ClassVar[bool]

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Iterator[Incumbent]: ...


@dataclass(frozen=True, slots=True)
class Hyperparameter:
    """One keyword argument of an optimizer's ``__init__``: its declaration."""

    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty

    def describe(self) -> str:
        t = getattr(self.annotation, "__name__", None) or str(self.annotation)
        t = t.replace("typing.", "").replace("collections.abc.", "")
        return f"{self.name}: {t}" + ("" if self.required else f" = {self.default!r}")


@dataclass(frozen=True)
class OptimizerInfo:
    """A registered optimizer: its class and the hyper-parameters its keyword-only
    ``__init__`` declares (names, types, defaults). ``k`` among them means it learns
    bounded-treewidth DAGs and takes a treewidth bound."""

    name: str
    cls: type
    hyperparameters: tuple[Hyperparameter, ...]

    @property
    def takes_k(self) -> bool:
        return any(h.name == "k" for h in self.hyperparameters)

    @property
    def exact(self) -> bool:
        return bool(getattr(self.cls, "exact", False))

    @cached_property
    def _adapters(self) -> dict[str, TypeAdapter[Any]]:
        return {h.name: TypeAdapter(h.annotation) for h in self.hyperparameters}

    def _valid(self, key: str, value: Any) -> bool:
        try:
            self._adapters[key].validate_python(value)
        except ValidationError:
            return False
        return True

    def check_params(self, params: Mapping[str, Any], k: int | None = None) -> None:
        """Reject unknown names, values of the wrong type or that the optimizer's
        constructor refuses, and a missing or unexpected ``k`` (given apart from
        ``params``).

        Raises
        ------
        InvalidConfigError
            Naming the algorithm, the parameter and what it accepts.
        """
        known = {h.name: h for h in self.hyperparameters if h.name != "k"}
        for key, value in params.items():
            if key == "k":
                raise InvalidConfigError(f"algorithm {self.name!r}: give the treewidth bound "
                                         f"as the field 'k' (-k), not as a parameter")
            if key not in known:
                raise InvalidConfigError(
                    f"algorithm {self.name!r} has no parameter {key!r}; it takes "
                    f"{', '.join(sorted(known)) or 'none'}")
            if misplaced_bool(value, known[key].annotation) or not self._valid(key, value):
                raise InvalidConfigError(
                    f"algorithm {self.name!r}: parameter {known[key].describe()}, got "
                    f"{value!r}")
        missing = [h.name for h in known.values() if h.required and h.name not in params]
        if missing:
            raise InvalidConfigError(f"algorithm {self.name!r} needs {', '.join(missing)}")
        if self.takes_k and k is None:
            raise InvalidConfigError(f"algorithm {self.name!r} needs a treewidth bound k")
        if not self.takes_k and k is not None:
            raise InvalidConfigError(f"algorithm {self.name!r} takes no treewidth bound k")
        # the values too: a constructor checks its own (choices, ranges), so that a grid
        # or a spec with one it refuses fails where it is read, not in every run after
        # its data and cache are built
        try:
            self.cls(**params, **({} if k is None else {"k": k}))
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"algorithm {self.name!r}: {exc}") from None


_REGISTRY: dict[str, type] = {}
T = TypeVar("T", bound=type)


def register(name: str) -> Callable[[T], T]:
    """Class decorator adding an optimizer to the registry under ``name``; its
    keyword-only ``__init__`` arguments (annotated, with defaults) are its declared
    hyper-parameters."""

    def deco(cls: T) -> T:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"optimizer {name!r} registered twice")
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls

    return deco


def _load_all() -> None:
    import bnsl_dist.search  # noqa: F401  (imports every optimizer module)


def optimizer_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get_optimizer(name: str) -> type:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidConfigError(f"unknown algorithm {name!r}; choose from "
                                 f"{', '.join(sorted(_REGISTRY))}") from None


_INFO: dict[str, OptimizerInfo] = {}


def _default(cls: type, p: inspect.Parameter) -> Any:
    """``p``'s default; a None standing for a class's own default (``_default_<name>``,
    as the named variants of one optimizer class set them) is that default."""
    if p.default is None:
        return getattr(cls, f"_default_{p.name}", None)
    return p.default


def optimizer_info(name: str) -> OptimizerInfo:
    """The declaration of a registered optimizer (unknown names: InvalidConfigError)."""
    if name not in _INFO:
        cls = get_optimizer(name)
        hints = typing.get_type_hints(cls.__init__)  # type: ignore[misc]
        params = [p for p in inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
                  if p.kind is inspect.Parameter.KEYWORD_ONLY]
        _INFO[name] = OptimizerInfo(name, cls, tuple(
            Hyperparameter(p.name, hints.get(p.name, Any), _default(cls, p)) for p in params))
    return _INFO[name]


def optimizer_stream(opt: Any, cache: Any, budget: Budget, rng: np.random.Generator,
                     data: Any = None) -> Iterator[Incumbent]:
    """The incumbents of ``opt`` on ``cache``; an optimizer that also scores families
    from the data (``needs_data``, e.g. ``tabu-data``) gets ``data`` and starts from
    ``cache``."""
    if not getattr(opt, "needs_data", False):
        return iter(opt.run(cache, budget, rng))
    if data is None:
        raise InvalidConfigError(f"{getattr(opt, 'name', opt)} scores families from the "
                                 "data: give the data, not only a cache file")
    return iter(opt.learn(data, budget, rng, cache_builder=lambda _data: cache))


def make_optimizer(name: str, k: int | None = None, **params: Any) -> Any:
    """Instantiate a registered optimizer after checking its parameters (and ``k``
    for the bounded-treewidth ones) against its declaration."""
    info = optimizer_info(name)
    info.check_params(params, k)
    if k is not None:
        params["k"] = k
    try:
        return info.cls(**params)
    except TypeError as exc:  # pragma: no cover - check_params mirrors the signature
        raise InvalidConfigError(f"algorithm {name!r}: {exc}") from None

