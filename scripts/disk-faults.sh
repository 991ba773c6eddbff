#!/usr/bin/env bash
# Full disks and read-only directories (issue "Nothing lost"), on real filesystems: a tmpfs
# with a size limit and a read-only mount (needs root: mount). A small model trains with a
# checkpoint, validation and snapshot every 3 updates.
#
#   scripts/disk-faults.sh                          # builds target/release/nmt first
#   NMT_BIN=target/release/nmt scripts/disk-faults.sh  # with a binary already built
#
# 1. Full disk: the model directory is a 384 KiB tmpfs, which fills after a few checkpoints.
#    The run must stop with a clear error ("No space left on device" naming the file); the
#    previous checkpoint and best model must still load; after the filesystem grows (remount),
#    the same command must resume and finish with the weights of an uninterrupted run.
# 2. Read-only: the model directory is a read-only mount; training must fail before any work
#    with an error naming the directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# NMT_BIN: an nmt binary already built (CI passes the one its test step built: building
# `-p nmt-cli` here again rebuilt candle and most of the tree, because cargo unifies features
# over what it builds and the test build's set differs).
if [ -n "${NMT_BIN:-}" ]; then
  nmt=$NMT_BIN
else
  cargo build --release -q -p nmt-cli
  nmt=$root/target/release/nmt
fi
work=$(mktemp -d)
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() { umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
python3 - "$work" <<'PY'
import random, sys
d = sys.argv[1]
rng = random.Random(3)
words = "uno dos tres cuatro cinco seis siete ocho".split()
lines = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 6))) for _ in range(300)]
open(f"{d}/t.src", "w").write("\n".join(lines) + "\n")
open(f"{d}/t.tgt", "w").write("\n".join(l.upper() for l in lines) + "\n")
open(f"{d}/c.toml", "w").write(f"""[model]
preset = "tiny"
[data]
train_src = "{d}/t.src"
train_tgt = "{d}/t.tgt"
dev_src = "{d}/t.src"
dev_tgt = "{d}/t.tgt"
src_subword = {{ kind = "word", vocab_size = 50 }}
tgt_subword = {{ kind = "word", vocab_size = 50 }}
[train]
max_steps = 60
valid_every = 3
valid_bleu_sentences = 10
average_last = 2
patience = 0
""")
PY
train() { "$nmt" train -c "$work/c.toml" --model-dir "$1" --quiet --threads 1; }
NMT_LOG=error train "$work/whole" > /dev/null 2>&1

echo "== full disk"
mount -t tmpfs -o size=384k tmpfs "$mnt"
status=0
NMT_LOG=error train "$mnt/m" > "$work/full.log" 2>&1 || status=$?
echo "exit status $status; error: $(grep 'error' "$work/full.log" | tail -n 1)"
[ "$status" -ne 0 ] || { echo "FAIL: the run did not stop on a full disk"; exit 1; }
grep -q "No space left" "$work/full.log" || { echo "FAIL: the error does not say the disk is full"; exit 1; }
step=$(python3 -c "
import json, struct, sys
b = open('$mnt/m/checkpoint.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
print(json.loads(json.loads(b[8:8 + n])['__metadata__']['train_progress'])['step'])")
echo "the last checkpoint (update $step) and the best model still load:"
echo "uno dos" | "$nmt" translate -m "$mnt/m/checkpoint.safetensors" > /dev/null
echo "uno dos" | "$nmt" translate -m "$mnt/m/model.safetensors" > /dev/null
echo "  yes"
mount -o remount,size=16m "$mnt"
NMT_LOG=error train "$mnt/m" > "$work/resume.log" 2>&1
python3 - "$work/whole/checkpoint.safetensors" "$mnt/m/checkpoint.safetensors" <<'PY'
import json, struct, sys
def tensors(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]] for k, v in h.items() if not k.startswith("opt.")}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys()
same = all(a[k] == b[k] for k in a)
print("resumed after the disk grew: final weights", "identical to the uninterrupted run's" if same else "DIFFER")
sys.exit(0 if same else 1)
PY
umount "$mnt"

echo "== read-only directory"
mkdir -p "$work/ro"
mount -t tmpfs -o size=1m,ro tmpfs "$mnt"
status=0
NMT_LOG=error train "$mnt/m" > "$work/ro.log" 2>&1 || status=$?
echo "exit status $status; error: $(grep 'error' "$work/ro.log" | tail -n 1)"
[ "$status" -ne 0 ] && grep -q "$mnt" "$work/ro.log" || { echo "FAIL"; exit 1; }
echo "disk faults: ok"
