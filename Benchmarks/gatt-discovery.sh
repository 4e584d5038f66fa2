#!/usr/bin/env bash
# Full GATT discovery against the Bumble test peripheral: ATT round trips and wall time.
#   Benchmarks/gatt-discovery.sh [RUNS]      (default 5; builds hcigatt in release mode)
# Each run starts a fresh virtual peer (Bumble keeps state across clients), connects with
# `hcigatt gatt --no-values --json` and reads the round trips hcigatt reports; the wall
# time covers connect + MTU exchange + discovery + disconnect.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scripts/bootstrap >/dev/null
swift build -c release --product hcigatt 2>&1 | tail -1
bin=.build/release/hcigatt
times=()
for i in $(seq 1 "$runs"); do
  log=$(mktemp)
  .venv/bin/python Tests/peer/bumble_peer.py --port 0 --peripheral "Thermo-1,gatt=health" >"$log" 2>/dev/null &
  peer=$!
  for _ in $(seq 1 100); do grep -q ready "$log" && break; sleep 0.1; done
  port=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$log")
  start=$(date +%s%N)
  out=$($bin gatt F0:F1:F2:F3:F4:01/public --no-values --json --transport "tcp:127.0.0.1:$port" 2>/dev/null)
  end=$(date +%s%N)
  kill $peer 2>/dev/null; wait $peer 2>/dev/null || true; rm -f "$log"
  trips=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["discovery_round_trips"], sum(len(s["characteristics"]) for s in d["services"]), len(d["services"]), d["mtu"])' "$out")
  ms=$(( (end - start) / 1000000 ))
  times+=("$ms")
  echo "run $i: $trips (round trips, characteristics, services, MTU); ${ms} ms"
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "median wall time: $(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p") ms over $runs runs"
