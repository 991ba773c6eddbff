"""Run `python -m joeynmt train CONFIG -t` (JoeyNMT's own CLI entry point, same argv) but stop
it after MINUTES of wall time by raising KeyboardInterrupt in the main thread. JoeyNMT 2.3.0
catches KeyboardInterrupt in its training loop ("Interrupt at epoch ..."), and then saves a
final checkpoint (<steps>.ckpt, latest.ckpt -> it) in its `finally:` block.

Needed because a background job started without job control has SIGINT ignored, so
`kill -INT` would not reach Python's handler; and JoeyNMT 2.3.0 has no wall-time limit.

usage: python scripts/train_timed.py MINUTES CONFIG
"""
import signal
import sys

import torch

minutes = float(sys.argv[1])
config = sys.argv[2]

n_threads = int(__import__("os").environ.get("OMP_NUM_THREADS", "1"))
torch.set_num_threads(n_threads)
print(f"[train_timed] torch threads: {torch.get_num_threads()}, "
      f"wall limit: {minutes} min", flush=True)


def _stop(signum, frame):
    raise KeyboardInterrupt(f"wall-time limit of {minutes} min reached")


signal.signal(signal.SIGALRM, _stop)
signal.signal(signal.SIGINT, signal.default_int_handler)  # manual stop: kill -INT PID
signal.alarm(max(1, int(minutes * 60)))

from joeynmt.__main__ import main  # noqa: E402

sys.argv = ["joeynmt", "train", config, "--skip-test"]
main()
signal.alarm(0)
