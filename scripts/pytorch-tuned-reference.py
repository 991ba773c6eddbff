#!/usr/bin/env python3
"""The PyTorch reference of bench-rnnsearch (bench/pytorch/pytorch_rnnsearch.py) with PyTorch's
documented CPU speed settings, so that `nmt bench` is also compared with PyTorch at its best and
not only with the reference's eager defaults (`TUNED=1 scripts/bench-vs-pytorch.sh`):
- `torch.compile` (TorchInductor) of the training loss (`forward_loss`, whose 30-step decoder
  loop it unrolls) and of the search's `decoder_step`;
- Adam with `fused=True` (one kernel for all parameters; the reference's default runs a Python
  loop over them on a CPU);
- with BF16=1, also `torch.autocast("cpu", dtype=torch.bfloat16)` around the forward passes:
  PyTorch's mixed precision on CPUs with AVX512_BF16 or AMX (products in bf16 through oneDNN,
  weights and Adam in f32).
Same weights, batch, loops and timing as the reference (three untimed warm-up calls, which
include the compilation; the first compilation of the loss takes minutes, later runs read
TorchInductor's cache). Prints the reference's JSON lines (`train`, `greedy`, `beam5`) with
`"impl": "pytorch-<version>-compiled[-bf16]"`.
Env: as the reference (THREADS, STEPS, BENCH_DATA), plus BENCH_REF (its folder) and BF16. Each
line has "at", the Unix time it was measured at (scripts/gpu-check.sh keeps figures by it).
"""
import contextlib
import json
import os
import sys
import time

import numpy as np
import torch

REF = os.environ.get("BENCH_REF") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "pytorch")
sys.path.insert(0, os.path.abspath(REF))
import pytorch_rnnsearch as ref  # noqa: E402
from gen_data import B, S, T  # noqa: E402

BF16 = os.environ.get("BF16", "0") == "1"


def precision():
    return torch.autocast("cpu", dtype=torch.bfloat16) if BF16 else contextlib.nullcontext()


def cpu_capability():
    """What PyTorch's own kernels (ATEN_CPU_CAPABILITY) and TorchInductor's generated code ran:
    scripts/bench-vs-pytorch.sh caps them with NMT_MAX_CPU_ISA, and the log should show that
    the cap held."""
    try:
        from torch._inductor import cpu_vec_isa
        inductor = str(cpu_vec_isa.pick_vec_isa())
    except Exception as e:  # a private module: say so rather than fail the benchmark
        inductor = f"unknown ({type(e).__name__})"
    return f"aten {torch.backends.cpu.get_cpu_capability()}, inductor {inductor}, onednn cap {os.environ.get('ONEDNN_MAX_CPU_ISA', 'none')}"


def main():
    ids = np.fromfile(os.path.join(ref.DATA, "batch.bin"), dtype="<i4").astype(np.int64)
    src = torch.from_numpy(ids[:B * S].reshape(B, S).copy())
    tgt = torch.from_numpy(ids[B * S:].reshape(B, T).copy())
    tgt_in = torch.cat([torch.full((B, 1), ref.BOS, dtype=torch.long), tgt[:, :-1]], 1)
    p = ref.load_params()
    loss_fn = torch.compile(ref.forward_loss)
    # greedy() and beam() look decoder_step up in their module at each call.
    ref.decoder_step = torch.compile(ref.decoder_step)
    with torch.no_grad(), precision():
        loss0 = ref.forward_loss(p, src, tgt_in, tgt).item()
    opt = torch.optim.Adam(list(p.values()), lr=1e-3, fused=True)

    def step():
        opt.zero_grad(set_to_none=True)
        with precision():
            loss = loss_fn(p, src, tgt_in, tgt)
        loss.backward()
        opt.step()
        loss.item()

    def search(fn):
        with precision():
            return fn(p, src, T).tolist()

    impl = f"pytorch-{torch.__version__}-compiled" + ("-bf16" if BF16 else "")
    base = {"impl": impl, "threads": ref.THREADS, "loss0": round(loss0, 6), "cpu": cpu_capability()}
    ms, mn = ref.timed(step, ref.N_STEPS)
    print(json.dumps({**base, "at": round(time.time(), 3), "bench": "train", "ms_median": round(ms, 2), "ms_min": round(mn, 2),
                      "target_tokens_per_s": round(B * T / (ms / 1e3), 1)}), flush=True)
    ms, mn = ref.timed(lambda: search(ref.greedy), ref.N_STEPS)
    print(json.dumps({**base, "at": round(time.time(), 3), "bench": "greedy", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}), flush=True)
    ms, mn = ref.timed(lambda: search(ref.beam), ref.N_STEPS)
    print(json.dumps({**base, "at": round(time.time(), 3), "bench": "beam5", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}), flush=True)


if __name__ == "__main__":
    main()
