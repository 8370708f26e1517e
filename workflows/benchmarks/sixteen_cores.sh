#!/bin/bash
# The 16-core figures of issues 15 and 17 in one run, most wanted first, each command
# with its own timeout and the whole under one deadline (PLAN seconds), as they were
# taken on a lent 16-core machine (workflows/results/benchmarks/README.md, "16 cores").
#
#   bash workflows/benchmarks/sixteen_cores.sh [RESULTS_DIR]
#
# from the repository root, with bnsl_dist importable and BNSL_SHARED_DATA set (the
# Twenty Datasets: book and the 12 of configs/grids/utilisation-16.yaml) and, for the
# pyAgrum row, the [peers] extra. Environment: W (workers, default: the cores), FEWER (the
# worker counts of bn500_fewer, default "4 8": bn500's quarter again on fewer workers), PLAN
# (seconds, default 570), STEPS (the steps to run, in that order; default "warm scaling
# grid r10 bn500 bn500_running bn2000": issue 15's open figures first, then issue 17's;
# "replay", not among them, replays the papers' grids on Dask, issue 41;
# the device run of session 19 took 65 + 128 + 206 + 104 + 120 + 59 s for warm, scaling,
# grid, r10, bn500 and bn500_running, session 20's 74 + 98 + 104 + 147 + 87 s for warm,
# grid, r10, scaling and bn500),
# WHEELS (a folder of wheels to install into /tmp/site first: a machine without the
# dependencies), PEERS_DATA (a folder of the seeded peers samples, *.csv.gz and
# *.dag.json, to copy instead of drawing them with pyAgrum), SMOKE=1 (small sizes, for
# checking the script on a small machine). Writes RESULTS_DIR (default
# workflows/benchmarks/out/sixteen) with each command's log and the benchmarks' JSON and
# markdown, and RESULTS_DIR.tgz.
set -u
T0=$(date +%s)
PLAN=${PLAN:-570}
W=${W:-$(nproc)}
RES=${1:-workflows/benchmarks/out/sixteen}
B=workflows/benchmarks/out
mkdir -p "$RES" "$B/peers_data"
left() { echo $(( PLAN - ($(date +%s) - T0) )); }
step() {  # step NAME MAX_SECONDS CMD...: run with the smaller of MAX and the time left
  local name=$1 max=$2; shift 2
  local l t s rc
  l=$(left); t=$(( max < l ? max : l ))
  if (( t < 20 )); then echo "== $name: skipped, $l s left" | tee -a "$RES/steps.txt"; return; fi
  echo "== $name (timeout $t s, $l s left) $(date +%T)" | tee -a "$RES/steps.txt"
  s=$(date +%s)
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  rc=$?
  echo "   rc=$rc in $(( $(date +%s) - s )) s" | tee -a "$RES/steps.txt"
  tail -4 "$RES/$name.log"
}
finish() {
  cp $B/sixteen-*.json $B/sixteen-*.md "$RES/" 2>/dev/null
  cp /tmp/bnsl-util/reports/*.json "$RES/" 2>/dev/null
  tar czf "$RES.tgz" -C "$(dirname "$RES")" "$(basename "$RES")"
}
trap finish EXIT
export PYTHONUNBUFFERED=1
if [[ -n ${WHEELS:-} ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
if [[ -n ${PEERS_DATA:-} ]]; then
  for f in "$PEERS_DATA"/*.csv.gz; do
    t=$B/peers_data/$(basename "$f" .gz); [[ -f $t ]] || gunzip -c "$f" > "$t"
  done
  cp "$PEERS_DATA"/*.dag.json $B/peers_data/ 2>/dev/null
fi
if [[ ${SMOKE:-0} == 1 ]]; then
  BN500=bn100; F=2; BN2000_S=20; SPV=300; R10=r0; R10_S=5; GRID=(--datasets nltcs)
else
  BN500=bn500; F=0.25; BN2000_S=120; SPV=6000; R10=r10; R10_S=60; GRID=()
fi
{ date -u; nproc; lscpu; free -g | head -2
  git log --oneline -1 2>/dev/null; git status --short 2>/dev/null | head -5
} > "$RES/machine.txt" 2>&1
CLI=(python3 -c "import sys; from bnsl_dist.cli import main; sys.argv[0] = 'bnsl-dist'; main()")
# compile every kernel the steps use (numba's disk cache), in two processes at once:
# learn --time-limit's stages, and the grid's cache method and optimizers (from its config)
GRID_WARM="from bnsl_dist.pipeline.config import load_grid; from bnsl_dist.pipeline.grid import \
expand_grid; from bnsl_dist.search.warmup import algorithm_spec, warm_up; \
g = load_grid('configs/grids/utilisation-16.yaml'); print(warm_up((g.cache.method,), \
{algorithm_spec(c.algorithm, c.search.params, c.k) for c in expand_grid(g)}))"
warm() {
  step warm 150 bash -c "python3 -c \"from workflows.benchmarks.peers import WARM; exec(WARM)\" &
    python3 -c \"$GRID_WARM\"; wait"
}
# issue 17: pyAgrum tabu on one core, then learn --time-limit on W workers in F of its time
bn500() {
  step bn500 200 python3 -m workflows.benchmarks.peers --networks $BN500 --tools pyagrum-tabu \
    bnsl_dist --seconds 900 --match pyagrum-tabu --match-fraction $F --bnsl-workers "$W" \
    --name sixteen-peers-$BN500
}
# the same quarter on a cluster started beforehand (what a user of a running cluster pays)
bn500_running() {
  local q
  q=$(python3 -c "import json; d = json.load(open('$B/sixteen-peers-$BN500.json')); print([r['budget'] for r in d['rows'] if r['tool'] == 'bnsl_dist'][0])" 2>/dev/null)
  [[ -n $q ]] || { echo "== bn500_running: skipped, no bn500 row" | tee -a "$RES/steps.txt"; return; }
  step bn500_running 120 python3 -m workflows.benchmarks.peers --networks $BN500 \
    --tools bnsl_dist --seconds "$q" --bnsl-workers "$W" --bnsl-running-cluster \
    --name sixteen-peers-$BN500-running
}
# the same quarter on fewer local workers (a faster start, cores less shared): 4 and 8
bn500_fewer() {
  local q w
  q=$(python3 -c "import json; d = json.load(open('$B/sixteen-peers-$BN500.json')); print([r['budget'] for r in d['rows'] if r['tool'] == 'bnsl_dist'][0])" 2>/dev/null)
  [[ -n $q ]] || { echo "== bn500_fewer: skipped, no bn500 row" | tee -a "$RES/steps.txt"; return; }
  for w in ${FEWER:-4 8}; do
    step bn500_w$w 90 python3 -m workflows.benchmarks.peers --networks $BN500 --tools bnsl_dist \
      --seconds "$q" --bnsl-workers "$w" --name sixteen-peers-$BN500-w$w
  done
}
# issue 17: 2,000 variables on W workers, above the generating network within 5 minutes
bn2000() {
  step bn2000 200 python3 -m workflows.benchmarks.peers --networks bn2000 --tools bnsl_dist \
    --seconds $BN2000_S --bnsl-workers "$W" --name sixteen-peers-bn2000
}
# issue 15: the cache build of book at 6,000 exact scores per variable, serial vs W
scaling() {
  step scaling 170 python3 -m workflows.benchmarks.scaling --data book --workers "$W" \
    --scores-per-variable $SPV --iterations 300 --seeds "$W" --grid-seeds 2 \
    --grid-iterations 300 --skip-overhead --name sixteen-scaling
}
# issue 15: learn r10 on W workers within its budgets + 15 s, the client's memory
r10() {
  step r10 200 python3 -m workflows.benchmarks.learn_large --data $R10 --workers "$W" \
    --seconds $R10_S --name sixteen-learn-$R10
}
# issue 15: the utilisation of a 288-cell grid on W workers
grid() {
  rm -rf /tmp/bnsl-util
  step grid 400 "${CLI[@]}" grid run configs/grids/utilisation-16.yaml --results /tmp/bnsl-util \
    --workers "$W" --no-progress --no-report "${GRID[@]}"
  # makespan, utilisation, lower bound, efficiency, scheduler CPU per task (issue 41)
  cp /tmp/bnsl-util/reports/summary.json "$RES/grid-summary.json" 2>/dev/null
}
# issue 41: the papers' grids replayed on Dask with more cores to pace the scheduler
replay() {
  step replay 300 env BNSL_BENCH_OUT="$RES" python3 -m workflows.benchmarks.replay --seconds 20
}
for name in ${STEPS:-warm scaling grid r10 bn500 bn500_running bn2000}; do
  case $name in
    warm|bn500|bn500_running|bn500_fewer|bn2000|scaling|r10|grid|replay) "$name" ;;
    *) echo "unknown step: $name (steps: warm bn500 bn500_running bn500_fewer bn2000 scaling r10 grid replay)" >&2; exit 2 ;;
  esac
done
echo "done at $(( $(date +%s) - T0 )) s" | tee -a "$RES/steps.txt"
