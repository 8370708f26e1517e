#!/usr/bin/env bash
# Start a Dask scheduler and N single-threaded workers on this host, for
#   bnsl-dist grid run GRID.yaml --results DIR --scheduler-file "$DIR/scheduler.json"
# Usage: deploy/scripts/start_local_cluster.sh [N_WORKERS] [RUN_DIR]
# Stops everything it started on Ctrl-C (or when the scheduler exits).
set -euo pipefail

N="${1:-$(nproc)}"
RUN_DIR="${2:-${TMPDIR:-/tmp}/bnsl-dist-cluster}"
HOST="${BNSL_HOST:-127.0.0.1}"
mkdir -p "$RUN_DIR"
SCHED_FILE="$RUN_DIR/scheduler.json"
rm -f "$SCHED_FILE"
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait || true
}
trap cleanup EXIT INT TERM

dask scheduler --host "$HOST" --port 0 --dashboard-address ":0" \
  --scheduler-file "$SCHED_FILE" >"$RUN_DIR/scheduler.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 100); do [[ -s "$SCHED_FILE" ]] && break; sleep 0.1; done
[[ -s "$SCHED_FILE" ]] || { echo "scheduler did not start; see $RUN_DIR/scheduler.log" >&2; exit 1; }

for i in $(seq 1 "$N"); do
  dask worker --scheduler-file "$SCHED_FILE" --nthreads 1 --nworkers 1 \
    --name "worker-$i" --local-directory "$RUN_DIR/worker-$i" \
    >"$RUN_DIR/worker-$i.log" 2>&1 &
  pids+=("$!")
done
echo "scheduler file: $SCHED_FILE ($N workers; logs in $RUN_DIR)"
echo "run:  bnsl-dist grid run GRID.yaml --results DIR --scheduler-file $SCHED_FILE"
wait "${pids[0]}"
