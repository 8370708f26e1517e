#!/usr/bin/env bash
# A one-node SLURM cluster on this machine (Debian/Ubuntu packages slurm-wlm and munge),
# then deploy/slurm/grid.sbatch on a small grid, its records compared with a local run
# of the same grid. Needs root (it installs packages, writes /etc/slurm/slurm.conf and
# /etc/munge/munge.key when absent, and starts munged, slurmctld and slurmd, which it
# stops at the end). Usage, from the repository root:
#   sudo deploy/slurm/try-local.sh [WORK_DIR]        (default /tmp/bnsl-slurm)
# The package must be importable by the job (installed, or PYTHONPATH exported).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/bnsl-slurm}"
[[ $EUID -eq 0 ]] || { echo "try-local.sh: run as root (it installs and starts SLURM)" >&2; exit 2; }
rm -rf "$WORK" && mkdir -p "$WORK"
t0=$(date +%s)

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends slurm-wlm munge
fi

# munge: a key, its daemon
if [[ ! -s /etc/munge/munge.key ]]; then mungekey --create --force; fi
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
PIDS=()
if ! pgrep -x munged >/dev/null; then runuser -u munge -- munged -F >"$WORK/munged.out" 2>&1 & PIDS+=($!); sleep 1; fi
munge -n | unmunge >/dev/null

# slurm: one node, this one, its cores (no cgroups: processes tracked by /proc)
HOST="$(hostname -s)"
CPUS="$(nproc)"
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p /etc/slurm "$WORK/spool" "$WORK/state"
if [[ -e /etc/slurm/slurm.conf && ! -e /etc/slurm/slurm.conf.before-bnsl ]]; then
  cp /etc/slurm/slurm.conf /etc/slurm/slurm.conf.before-bnsl
fi
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=bnsl-local
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
SlurmdSpoolDir=$WORK/spool
StateSaveLocation=$WORK/state
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
SlurmdParameters=config_overrides
NodeName=$HOST CPUs=$(( CPUS < 3 ? 3 : CPUS )) RealMemory=$MEM_MB State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
JOB=""
stop() {  # the job, then the daemons this script started (by their ids)
  [[ -n "$JOB" ]] && scancel "$JOB" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT
slurmctld -D -c -i >"$WORK/slurmctld.out" 2>&1 & PIDS+=($!)
sleep 1
slurmd -D -c >"$WORK/slurmd.out" 2>&1 & PIDS+=($!)
for _ in $(seq 1 60); do
  sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix)' && break; sleep 1
done
sinfo
echo "SLURM up in $(( $(date +%s) - t0 )) s"

# a small grid: two optimizers, four seeds, iteration budgets (reproducible), cells of
# about 20 s each on the development machine
cat > "$WORK/grid.yaml" <<'EOF'
name: slurm-try
seed: 7
datasets: [{name: nltcs, splits: [test]}]
cache: {method: independence, scores_per_variable: 40, max_indegree: 3}
algorithms: [{name: asobs-ent}, {name: kg, k: [2]}]
seeds: [0, 1, 2, 3]
budget: {iterations: 1000000}
EOF
# compiled kernels kept between runs of this script (a cold cache costs minutes per worker)
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-/var/tmp/bnsl-slurm-numba}" PYTHONPATH="${PYTHONPATH:-}"
cd "$REPO"
jobs_left() { squeue -h -u "$(id -un)" -n bnsl-dist-grid 2>/dev/null | grep -q .; }

# 1. grid.sbatch under an 11-minute limit: it starts no cell after the first minute
#    (--stop-at, 10 minutes before the end), exits 3 with cells left and, with
#    BNSL_RESUBMIT=1, resubmits itself until the grid is done
t1=$(date +%s)
JOB=$(BNSL_RESUBMIT=1 sbatch --parsable --nodes=1 --ntasks=3 --ntasks-per-node=3 \
      --mem-per-cpu=1G --time=11 --output="$WORK/job-%j.out" \
      deploy/slurm/grid.sbatch "$WORK/grid.yaml" "$WORK/slurm")
echo "submitted job $JOB"
sleep 2
while jobs_left; do sleep 2; done
echo "grid.sbatch: $(ls "$WORK"/job-*.out | wc -l) jobs, $(( $(date +%s) - t1 )) s"
grep -hE "cells:|not started|rerun|Submitted" "$WORK"/job-*.out || true

# 2. dask-jobqueue: the client here, two single-worker jobs, TLS
cat > "$WORK/jobqueue.yaml" <<EOF
kind: slurm
tls: true
shared_fs: true
jobqueue: {cores: 1, processes: 1, memory: 1GiB, walltime: "00:15:00", queue: local,
           jobs: 2, local_directory: /tmp, worker_extra_args: ["--nthreads", "1"],
           job_extra_directives: ["--output=$WORK/jobqueue-%j.out"],
           job_script_prologue: ["export NUMBA_CACHE_DIR=$NUMBA_CACHE_DIR PYTHONPATH=$PYTHONPATH"]}
EOF
t2=$(date +%s)
bnsl-dist grid run "$WORK/grid.yaml" --results "$WORK/jobqueue" --cluster "$WORK/jobqueue.yaml" \
  --no-progress --no-report
echo "dask-jobqueue: $(( $(date +%s) - t2 )) s"

# 3. the same grid on a local cluster: the records must be equal
t3=$(date +%s)
bnsl-dist grid run "$WORK/grid.yaml" --results "$WORK/local" --workers 2 --no-progress --no-report
echo "local: $(( $(date +%s) - t3 )) s"
python - "$WORK" <<'EOF'
import sys
from bnsl_dist.results.store import ResultStore
w = sys.argv[1]
same = lambda d: {r.key: (r.best_score, r.dag_json) for r in ResultStore(d).read_results()}
local = same(f"{w}/local")
for run in ("slurm", "jobqueue"):
    got = same(f"{w}/{run}")
    assert got == local, f"{run}: {len(got)} records, differing from the local run's"
    print(f"{run}: {len(got)} records, equal to the local run's")
EOF
echo "try-local.sh: done in $(( $(date +%s) - t0 )) s"
