"""`python -m joeynmt translate CONFIG` (same argv, JoeyNMT's own entry point), counting the
decoder's work: rows x steps of every RecurrentDecoder.forward call, printed to stderr at exit
as `decoder row-steps: N`. That is the number of hypothesis-steps JoeyNMT computed, the
measure of work that does not depend on how long the outputs are.

usage: python translate_counted.py CONFIG < input > output
"""
import atexit
import sys

import torch
import joeynmt.decoders as dec
from joeynmt.__main__ import main

count = [0]
orig = dec.RecurrentDecoder.forward


def counted(self, trg_embed, *args, **kwargs):
    steps = kwargs.get("unroll_steps", args[3] if len(args) > 3 else trg_embed.shape[1])
    count[0] += int(trg_embed.shape[0]) * int(steps)
    return orig(self, trg_embed, *args, **kwargs)


dec.RecurrentDecoder.forward = counted
atexit.register(lambda: print(f"decoder row-steps: {count[0]} (torch threads {torch.get_num_threads()})", file=sys.stderr))
sys.argv = ["joeynmt", "translate", sys.argv[1]]
main()
