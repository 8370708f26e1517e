"""Batch clusters: dask-jobqueue (SLURM, PBS, SGE, LSF) and Kubernetes (the Dask
operator), opened for :func:`bnsl_dist.orchestrate.cluster.open_client`; the job script a
jobqueue cluster would submit (:func:`jobqueue_job_script`, started nowhere). Both packages
are optional.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from distributed import Client

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.orchestrate.cluster import announce_client, temporary_security
from bnsl_dist.pipeline.config import ClusterConfig, JobqueueConfig

__all__ = ["jobqueue_job_script", "jobqueue_kwargs", "open_batch_cluster"]


def jobqueue_job_script(kind: str, cfg: JobqueueConfig,
                        scheduler: str = "tcp://scheduler:8786") -> str:
    """The batch script dask-jobqueue would submit for one worker job (no cluster is
    started). Needs the optional ``dask-jobqueue`` package."""
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {kind!r} needs the optional package "
                                 "dask-jobqueue (pip install dask-jobqueue)") from None
    job_cls = {"slurm": dask_jobqueue.slurm.SLURMJob, "pbs": dask_jobqueue.pbs.PBSJob,
               "sge": dask_jobqueue.sge.SGEJob, "lsf": dask_jobqueue.lsf.LSFJob}[kind]
    kw = cfg.cluster_kwargs()
    kw.pop("interface", None)
    kw.pop("local_directory", None)
    job = job_cls(scheduler=scheduler, name="bnsl-dist-worker", **kw)
    script: str = job.job_script()
    return script



def jobqueue_kwargs(cluster: ClusterConfig) -> dict[str, Any]:
    """dask-jobqueue arguments of ``cluster``: TLS with temporary credentials unless
    ``tls: false`` (workers on other hosts must not take plain-TCP connections from
    anyone who reaches them; their job scripts read the credentials from
    ``~/.bnsl-dist/jobqueue-tls``, mode 0700, instead of files dask-jobqueue would
    write into the working directory), the dashboard on 127.0.0.1 unless configured."""
    assert cluster.jobqueue is not None
    kw = cluster.jobqueue.cluster_kwargs()
    kw.setdefault("scheduler_options", {}).setdefault(
        "dashboard_address", cluster.dashboard_address or "127.0.0.1:8787")
    if cluster.tls:
        kw["security"] = temporary_security()
        kw["protocol"] = "tls://"
        tmp = Path("~/.bnsl-dist/jobqueue-tls").expanduser()
        tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp.chmod(0o700)
        kw["shared_temp_directory"] = str(tmp)
    return kw




@contextlib.contextmanager
def open_batch_cluster(cluster: ClusterConfig, announce: bool = True) -> Iterator[Client]:
    """A client of a new Kubernetes (``kind: kubernetes``) or dask-jobqueue cluster
    (``slurm``, ``pbs``, ``sge``, ``lsf``: :func:`jobqueue_kwargs`, scaled to its
    ``jobs``), closed on exit. Its workers are not waited for: they may queue."""
    if cluster.kind == "kubernetes":
        k8s = cluster.kubernetes
        if k8s is None:
            raise InvalidConfigError("cluster kind 'kubernetes' needs a 'kubernetes' section")
        try:
            from dask_kubernetes.operator import KubeCluster
        except ImportError:
            raise InvalidConfigError("cluster kind 'kubernetes' needs the optional package "
                                     "dask-kubernetes") from None
        kc = KubeCluster(name=k8s.name, namespace=k8s.namespace, image=k8s.image,
                         n_workers=k8s.n_workers, resources=k8s.resources or None,
                         env=k8s.env or None)
        with _client_of(kc, announce) as client:
            yield client
        return
    jq = cluster.jobqueue
    if jq is None:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs a 'jobqueue' section")
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs the optional package "
                                 f"dask-jobqueue (pip install dask-jobqueue)") from None
    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster,
           "sge": dask_jobqueue.SGECluster, "lsf": dask_jobqueue.LSFCluster}[cluster.kind]
    jc = cls(**jobqueue_kwargs(cluster))
    jc.scale(jobs=jq.jobs)
    with _client_of(jc, announce) as client:
        yield client


@contextlib.contextmanager
def _client_of(cluster: Any, announce: bool) -> Iterator[Client]:
    """A client of a started ``cluster``, announced; the cluster closed at the end."""
    try:
        with Client(cluster) as client:
            announce_client(client, announce)
            yield client
    finally:
        cluster.close()
