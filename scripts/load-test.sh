#!/usr/bin/env bash
# Load test of `nmt serve` on 127.0.0.1 (issue "nmt serve"), bounded in count and time.
#
#   scripts/load-test.sh MODEL [CLIENTS=64] [REQUESTS=200] [BASELINE=400]
#
# 1. `nmt serve` (under /usr/bin/time -v, for its peak memory) with the default limits; 64
#    clients × 200 requests of 1–3 test verses, beam 5; then one client sending BASELINE of the
#    same verses one at a time (crates/nmt-serve/examples/loadtest.rs). Reports errors, p50/p99
#    latency, sentences/s of both and their ratio.
# 2. The same load again, and SIGTERM to the server 3 s into it: requests in flight must
#    complete (no broken connection); later ones are refused. Reports how long the server took
#    to stop.
# Writes runs/load-test/: results.txt, serve.*.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:?usage: scripts/load-test.sh MODEL [CLIENTS] [REQUESTS] [BASELINE]}
clients=${2:-64}
requests=${3:-200}
baseline=${4:-400}
cd "$root"
cargo build --release -q -p nmt-cli -p nmt-serve --example loadtest
nmt=$root/target/release/nmt
load=$root/target/release/examples/loadtest
out=$root/runs/load-test
mkdir -p "$out"
gzip -dc data/bible-en-es/test.en.gz > "$out/test.en"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

start_server() {
  /usr/bin/time -v "$nmt" serve -m "en-es=$model" --port "$port" > /dev/null 2> "$out/serve.$1.log" &
  server=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the server did not start" >&2
  exit 1
}

start_server load
"$load" --port "$port" --sentences "$out/test.en" --clients "$clients" --requests "$requests" --baseline "$baseline" | tee "$out/load.json"
curl -s "http://127.0.0.1:$port/health" | tee "$out/health.json"; echo
# /usr/bin/time does not pass signals on: signal the server itself, its child.
pkill -TERM -P "$server"; wait "$server" || true
rss=$(grep 'Maximum resident' "$out/serve.load.log" | awk '{print $NF}')

start_server sigterm
"$load" --port "$port" --sentences "$out/test.en" --clients "$clients" --requests "$requests" --baseline 0 > "$out/sigterm.json" &
loader=$!
sleep 3
t0=$(date +%s.%N)
pkill -TERM -P "$server"
status=0; wait "$server" || status=$?
stop_s=$(echo "$(date +%s.%N) - $t0" | bc)
wait "$loader"
{
  echo "load: $(cat "$out/load.json")"
  echo "server peak RSS during the load: $((rss / 1024)) MB"
  echo "SIGTERM 3 s into the same load: server exit status $status after $stop_s s; clients: $(cat "$out/sigterm.json")"
} | tee "$out/results.txt"
