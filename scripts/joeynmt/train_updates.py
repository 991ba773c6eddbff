"""Train JoeyNMT 2.3.0 for a fixed number of updates and keep every validation's greedy output.

usage (in the directory that holds data/ and spm/, as CONFIG's relative paths expect):
  python scripts/joeynmt/train_updates.py CONFIG OUT UPDATES VALID_EVERY BATCH_TOKENS DEV

Writes OUT/config.yaml: CONFIG with `training.updates` = UPDATES (JoeyNMT stops there, after that
update's validation), `validation_freq` = VALID_EVERY, token batches of BATCH_TOKENS (JoeyNMT
counts max(source, target length + 1) × sentences, padding included), `data.dev` = DEV,
`model_dir` = OUT/model, and a checkpoint at every validation (`keep_best_ckpts: -1`), so that a
killed run can go on. Then runs JoeyNMT's own `train` entry point, and after each validation:
- copies its greedy output on DEV (JoeyNMT validates with beam 1 and writes STEP.hyps,
  detokenised by its sentencepiece model) to OUT/valid/STEP.hyp;
- appends `STEP<TAB>target tokens seen<TAB>seconds` to OUT/curve.tsv: JoeyNMT logs tokens per
  second only; the count is its own TrainStatistics.total_tokens (each batch's target tokens,
  </s> included, padding not), the seconds are wall time since the first start.

Run again after a kill, it continues from OUT/model's latest checkpoint: the model, optimizer,
scheduler, step and token counts are restored (the old directory becomes OUT/model.prev).
JoeyNMT 2.3.0 reseeds its batch sampler at the start of every epoch, so the resumed epoch's batch
order starts again from that epoch's beginning: a resumed curve is close to, not identical with,
an uninterrupted one. SIGTERM stops it as Ctrl-C does: JoeyNMT saves a checkpoint.
"""
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import torch
import yaml

config, out, updates, valid_every, batch_tokens, dev = sys.argv[1:7]
out = Path(out).absolute()
(out / "valid").mkdir(parents=True, exist_ok=True)
cfg = yaml.safe_load(open(config, encoding="utf-8"))
cfg["data"]["dev"] = dev
cfg["model_dir"] = str(out / "model")
train = cfg["training"]
train.pop("model_dir", None)
train.update(
    updates=int(updates), validation_freq=int(valid_every),
    batch_size=int(batch_tokens), batch_type="token", keep_best_ckpts=-1, overwrite=True,
)
# JoeyNMT requires validation_freq to be a multiple of logging_freq (logging only).
train["logging_freq"] = math.gcd(int(train.get("logging_freq", 100)), int(valid_every))
train.pop("load_model", None)
latest = out / "model" / "latest.ckpt"
if latest.exists():
    shutil.rmtree(out / "model.prev", ignore_errors=True)
    ckpt = latest.resolve().name
    (out / "model").rename(out / "model.prev")
    train["load_model"] = str(out / "model.prev" / ckpt)
    print(f"[train_updates] resuming from {train['load_model']}", flush=True)
with open(out / "config.yaml", "w", encoding="utf-8") as f:
    yaml.safe_dump(cfg, f, sort_keys=False)

curve = out / "curve.tsv"
rows = curve.read_text().split("\n")[:-1] if curve.exists() else []
before = float(rows[-1].split("\t")[2]) if rows else 0.0
started = time.time()
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

from joeynmt import training  # noqa: E402
from joeynmt.__main__ import main  # noqa: E402

validate = training.TrainManager._validate


def validate_and_keep(self, valid_data):
    validate(self, valid_data)
    if self.rank == 0:
        step = self.stats.steps
        shutil.copyfile(self.model_dir / f"{step}.hyps", out / "valid" / f"{step}.hyp")
        with curve.open("a", encoding="utf-8") as f:
            f.write(f"{step}\t{self.stats.total_tokens}\t{before + time.time() - started:.1f}\n")


def stop(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


training.TrainManager._validate = validate_and_keep
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["joeynmt", "train", str(out / "config.yaml"), "--skip-test"]
main()
