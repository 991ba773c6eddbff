"""PyTorch's fastest forms of the reference model (bench-rnnsearch, pytorch_rnnsearch.py) on one
CUDA GPU: what `nmt bench --gpu` is compared with (issue 57; scripts/gpu-check.sh runs both).

Forms of the training step (forward, backward, Adam), each at every batch of BATCHES:
  eager        the reference's own code, op by op, f32
  eager-bf16   the same under torch.autocast(bfloat16)
  cudnn-bf16   the encoder as one cuDNN nn.GRU (bidirectional, the same weights), bf16 autocast
  graph        the whole step captured once as a CUDA graph (torch.cuda.graph, static inputs,
               Adam(capturable=True)) and replayed, f32
  graph-bf16   the same under bf16 autocast
and the reference's eager greedy and beam-5 search (30 steps, no early stop).

Every form starts from init.bin and prints its first loss (loss0) so that all compute the same
model; bf16 forms agree to about 1e-2. One JSON line per measurement, with "form" and "batch".
A batch of 128 is the reference's 32 sentences repeated, as `nmt bench --batch 128`.
Env: BENCH_DATA (gen_data.py's output), STEPS (timed repetitions, default 20), BATCHES
(default "32,128"), FORMS (comma-separated subset), SEARCHES (default "greedy,beam5"; empty for
none). Each line is printed and flushed as soon as it is measured, with "at" (Unix seconds), so
that a run killed later keeps it (scripts/gpu-check.sh). Without CUDA it runs the eager and cuDNN
forms on the CPU (to check the script) and skips the graphs.
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_rnnsearch as ref  # noqa: E402
from gen_data import B, E, S, T, H  # noqa: E402

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"
torch.set_default_device(DEV)
STEPS = int(os.environ.get("STEPS", "20"))
BATCHES = [int(b) for b in os.environ.get("BATCHES", "32,128").split(",")]
FORMS = [f for f in os.environ.get("FORMS", "eager,eager-bf16,cudnn-bf16,graph,graph-bf16").split(",") if f]
SEARCHES = [s for s in os.environ.get("SEARCHES", "greedy,beam5").split(",") if s]
for _s in SEARCHES:
    if _s not in ("greedy", "beam5"):
        sys.exit(f"SEARCHES: {_s!r} is not greedy or beam5")


def sync():
    if CUDA:
        torch.cuda.synchronize()


def timed(fn, reps):
    times = []
    for it in range(3 + reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        if it >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def batch(copies):
    ids = np.fromfile(os.path.join(ref.DATA, "batch.bin"), dtype="<i4").astype(np.int64)
    src = torch.from_numpy(ids[:B * S].reshape(B, S).copy()).to(DEV).repeat(copies, 1)
    tgt = torch.from_numpy(ids[B * S:].reshape(B, T).copy()).to(DEV).repeat(copies, 1)
    tgt_in = torch.cat([torch.full((B * copies, 1), ref.BOS, dtype=torch.long), tgt[:, :-1]], 1)
    return src, tgt_in, tgt


def params():
    return {k: v.detach().to(DEV).requires_grad_(True) for k, v in ref.load_params().items()}


def cudnn_encoder(p):
    """An nn.GRU with the reference encoder's weights (PyTorch's cell: gates [r | z | n],
    weights stored [out, in]); returns encode() over it. Its parameters replace the encoder's."""
    gru = torch.nn.GRU(E, H, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for suffix, d in (("", "f"), ("_reverse", "b")):
            getattr(gru, "weight_ih_l0" + suffix).copy_(p[f"enc_{d}_wih"].T)
            getattr(gru, "weight_hh_l0" + suffix).copy_(p[f"enc_{d}_whh"].T)
            getattr(gru, "bias_ih_l0" + suffix).copy_(p[f"enc_{d}_bih"])
            getattr(gru, "bias_hh_l0" + suffix).copy_(p[f"enc_{d}_bhh"])

    def encode(p, src):
        b, s = src.shape
        hs, _ = gru(p["src_emb"][src])
        s0 = torch.tanh(hs[:, 0, H:] @ p["init_w"] + p["init_b"])
        uh = (hs.reshape(b * s, 2 * H) @ p["att_u"]).reshape(b, s, -1)
        return hs, uh, s0

    others = [v for k, v in p.items() if not k.startswith("enc_")]
    return encode, others + list(gru.parameters())


def train_form(form, copies):
    p = params()
    src, tgt_in, tgt = batch(copies)
    bf16 = form.endswith("bf16")
    leaves = list(p.values())
    encode = ref.encode
    if form.startswith("cudnn"):
        encode, leaves = cudnn_encoder(p)

    graph = form.startswith("graph")

    def loss_fn():
        saved = ref.encode
        ref.encode = encode  # forward_loss looks encode up as a module global
        try:
            # Autocast's cast cache must be off inside a graph capture (PyTorch's CUDA graph notes).
            with torch.autocast(DEV, dtype=torch.bfloat16, enabled=bf16, cache_enabled=not graph):
                return ref.forward_loss(p, src, tgt_in, tgt)
        finally:
            ref.encode = saved

    with torch.no_grad():
        loss0 = loss_fn().item()
    opt = torch.optim.Adam(leaves, lr=1e-3, capturable=graph)

    def step():
        opt.zero_grad(set_to_none=not graph)  # a graph keeps its gradient buffers
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss

    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm-up outside the graph, as torch.cuda.graph requires
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_loss = step()
        run = g.replay
    else:
        run = step
    ms, mn = timed(run, STEPS)
    last = static_loss.item() if graph else step().item()
    return {"bench": "train", "loss0": round(loss0, 6), "loss_last": round(last, 6), "ms_median": round(ms, 3),
            "ms_min": round(mn, 3), "target_tokens_per_s": round(B * copies * T / (ms / 1e3), 1)}


def search_form(name, copies):
    p = params()
    src, _, _ = batch(copies)
    fn = (lambda: ref.greedy(p, src, T)) if name == "greedy" else (lambda: ref.beam(p, src, T))
    ms, mn = timed(fn, STEPS)
    return {"bench": name, "ms_median": round(ms, 3), "ms_min": round(mn, 3),
            "sentences_per_s": round(B * copies / (ms / 1e3), 1)}


def emit(row):
    print(json.dumps({**row, "at": round(time.time(), 3)}), flush=True)


def main():
    base = {"impl": f"pytorch-{torch.__version__}", "device": torch.cuda.get_device_name() if CUDA else "cpu"}
    for b in BATCHES:
        if b % B:
            sys.exit(f"BATCHES: {b} is not a multiple of {B}")
        for form in FORMS:
            if form.startswith("graph") and not CUDA:
                emit({**base, "form": form, "batch": b, "bench": "train", "skipped": "no CUDA device"})
                continue
            emit({**base, "form": form, "batch": b, **train_form(form, b // B)})
        for name in SEARCHES:
            emit({**base, "form": "eager", "batch": b, **search_form(name, b // B)})


if __name__ == "__main__":
    main()
