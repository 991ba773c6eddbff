"""The PyTorch reference implementation of the benchmark model bench-rnnsearch.

It is what scripts/bench-vs-pytorch.sh times `nmt bench` against (and what
scripts/pytorch-tuned-reference.py and scripts/pytorch-int8-reference.py import and re-time): the
model of the preset `bench-rnnsearch` (crates/nmt/src/config/presets.rs), RNNsearch of Bahdanau et
al. 2014 written from plain PyTorch tensor ops, so that every framework computes the same thing.
The equations, with the project's letters, are in docs/MODELS.md ("bench-rnnsearch" section):
  source/target vocab 8000, embeddings 256, bidirectional GRU encoder 256 per direction (PyTorch's
  reset-after cell, biases b_ih and b_hh), s_0 = tanh(W_s <-h_1 + b_s), additive attention 256
  (U_a h_j precomputed, computed from s_{i-1}), decoder GRU 256 whose input is [E y_{i-1}; c_i],
  deep output maxout on the *new* state: t~ = W [s_i; E y_{i-1}; c_i] + b (512) -> max over
  adjacent pairs (256) -> softmax over 8000 target words. Batch 32 x 30 source x 30 target tokens.
Weights and batch come from gen_data.py (data/init.bin, data/batch.bin), so any implementation can
load the same numbers and compare its first loss (printed as loss0) before timing; `nmt bench
--data DIR` loads them into the preset (crates/nmt/src/bench/reference.rs).

Run (from the repository root; bench/pytorch/README.md has the details):
  bench/pytorch/setup.sh                                   # torch + numpy into ~/.cache/nmt-bench-venv
  BENCH_DATA=target/bench-data python3 bench/pytorch/gen_data.py
  BENCH_DATA=target/bench-data THREADS=2 ~/.cache/nmt-bench-venv/bin/python bench/pytorch/pytorch_rnnsearch.py
or the whole comparison with `nmt bench`: scripts/bench-vs-pytorch.sh [ROUNDS] [THREADS].

Prints one JSON line per measurement:
  train: median ms per step (forward + backward + Adam), target tokens/s
  greedy / beam5: 32 sentences x 30 decoder steps (no early stop), sentences/s
Env: THREADS (default 2), STEPS (timed repetitions, default 20), BENCH_DATA (data dir, default
data/ next to this file).

Kept importable as a module (scripts/pytorch-*-reference.py use load_params, forward_loss,
encode, decoder_step, greedy, beam, timed, BOS, DATA, THREADS, N_STEPS; greedy and beam look up
encode and decoder_step as module globals, so a caller may replace them).
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_data import PARAMS, B, S, T, H, A  # noqa: E402

BOS = 1
BEAM = 5
THREADS = int(os.environ.get("THREADS", "2"))
torch.set_num_threads(THREADS)
DATA = os.environ.get("BENCH_DATA") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
N_STEPS = int(os.environ.get("STEPS", "20"))


def load_params():
    flat = np.fromfile(os.path.join(DATA, "init.bin"), dtype="<f4")
    p, off = {}, 0
    for name, shape in PARAMS:
        n = int(np.prod(shape))
        p[name] = torch.from_numpy(flat[off:off + n].reshape(shape).copy()).requires_grad_(True)
        off += n
    assert off == flat.size, "init.bin does not match PARAMS: re-run gen_data.py"
    return p


def gru(gi, h, whh, bhh):
    """One GRU step; gi = W x + b_i for the three gates [r | z | n], already computed."""
    gh = h @ whh + bhh
    r = torch.sigmoid(gi[:, :H] + gh[:, :H])
    z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return n + z * (h - n)  # z * h + (1 - z) * n


def encode(p, src):
    b, s = src.shape
    xs = p["src_emb"][src.reshape(-1)]
    gi_f = (xs @ p["enc_f_wih"] + p["enc_f_bih"]).reshape(b, s, 3 * H)
    gi_b = (xs @ p["enc_b_wih"] + p["enc_b_bih"]).reshape(b, s, 3 * H)
    h = torch.zeros(b, H)
    hf = []
    for t in range(s):
        h = gru(gi_f[:, t], h, p["enc_f_whh"], p["enc_f_bhh"])
        hf.append(h)
    h = torch.zeros(b, H)
    hb = [None] * s
    for t in reversed(range(s)):
        h = gru(gi_b[:, t], h, p["enc_b_whh"], p["enc_b_bhh"])
        hb[t] = h
    hs = torch.cat([torch.stack(hf, 1), torch.stack(hb, 1)], 2)
    s0 = torch.tanh(hb[0] @ p["init_w"] + p["init_b"])
    uh = (hs.reshape(b * s, 2 * H) @ p["att_u"]).reshape(b, s, A)
    return hs, uh, s0


def attend(p, hs, uh, s, mask_bias):
    b, sl, _ = uh.shape
    ws = s @ p["att_w"] + p["att_b"]
    x = torch.tanh(uh + ws.unsqueeze(1))
    e = (x.reshape(b * sl, A) @ p["att_v"]).reshape(b, sl) + mask_bias
    a = torch.softmax(e, 1)
    return torch.bmm(a.unsqueeze(1), hs).squeeze(1)


def maxout_logits(p, s, ey, c):
    t = torch.cat([s, ey, c], 1) @ p["out_w"] + p["out_b"]
    t = t.reshape(t.shape[0], H, 2).amax(2)
    return t @ p["proj_w"] + p["proj_b"]


def forward_loss(p, src, tgt_in, tgt_out):
    b, t_len = tgt_in.shape
    hs, uh, s = encode(p, src)
    mask_bias = ((src != 0).float() - 1.0) * 1e9
    ys = p["tgt_emb"][tgt_in.reshape(-1)]
    gie = (ys @ p["dec_wie"] + p["dec_bih"]).reshape(b, t_len, 3 * H)
    states, ctxs = [], []
    for i in range(t_len):
        c = attend(p, hs, uh, s, mask_bias)
        s = gru(gie[:, i] + c @ p["dec_wic"], s, p["dec_whh"], p["dec_bhh"])
        states.append(s)
        ctxs.append(c)
    st = torch.stack(states, 1).reshape(b * t_len, H)
    cs = torch.stack(ctxs, 1).reshape(b * t_len, 2 * H)
    lp = torch.log_softmax(maxout_logits(p, st, ys, cs), -1)
    tgt = tgt_out.reshape(-1)
    mask = (tgt != 0).float()
    picked = lp.gather(1, tgt.unsqueeze(1)).squeeze(1)
    return -(picked * mask).sum() / mask.sum()


def decoder_step(p, hs, uh, s, mask_bias, y):
    c = attend(p, hs, uh, s, mask_bias)
    ey = p["tgt_emb"][y]
    s = gru(ey @ p["dec_wie"] + p["dec_bih"] + c @ p["dec_wic"], s, p["dec_whh"], p["dec_bhh"])
    return s, torch.log_softmax(maxout_logits(p, s, ey, c), -1)


@torch.no_grad()
def greedy(p, src, steps):
    hs, uh, s = encode(p, src)
    mask_bias = ((src != 0).float() - 1.0) * 1e9
    y = torch.full((src.shape[0],), BOS, dtype=torch.long)
    out = []
    for _ in range(steps):
        s, lp = decoder_step(p, hs, uh, s, mask_bias, y)
        y = lp.argmax(1)
        out.append(y)
    return torch.stack(out, 1)


@torch.no_grad()
def beam(p, src, steps, k=BEAM):
    """Batched beam search, k hypotheses per sentence, fixed number of steps (no early stop)."""
    b = src.shape[0]
    hs, uh, s = encode(p, src)
    mask_bias = ((src != 0).float() - 1.0) * 1e9
    rep = lambda t: t.repeat_interleave(k, 0)  # noqa: E731
    hs, uh, s, mask_bias = rep(hs), rep(uh), rep(s), rep(mask_bias)
    y = torch.full((b * k,), BOS, dtype=torch.long)
    score = torch.full((b, k), float("-inf"))
    score[:, 0] = 0.0
    hist = []
    for _ in range(steps):
        s, lp = decoder_step(p, hs, uh, s, mask_bias, y)
        v = lp.shape[1]
        cand = (score.reshape(b * k, 1) + lp).reshape(b, k * v)
        score, idx = cand.topk(k, 1)
        origin = (idx // v) + torch.arange(b).unsqueeze(1) * k
        y = (idx % v).reshape(-1)
        s = s[origin.reshape(-1)]
        hist.append((origin.reshape(-1), y))
    return score


def timed(fn, reps):
    times = []
    for it in range(3 + reps):
        t0 = time.perf_counter()
        fn()
        if it >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def main():
    ids = np.fromfile(os.path.join(DATA, "batch.bin"), dtype="<i4").astype(np.int64)
    src = torch.from_numpy(ids[:B * S].reshape(B, S).copy())
    tgt = torch.from_numpy(ids[B * S:].reshape(B, T).copy())
    tgt_in = torch.cat([torch.full((B, 1), BOS, dtype=torch.long), tgt[:, :-1]], 1)

    p = load_params()
    with torch.no_grad():
        loss0 = forward_loss(p, src, tgt_in, tgt).item()
    opt = torch.optim.Adam(list(p.values()), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = forward_loss(p, src, tgt_in, tgt)
        loss.backward()
        opt.step()
        loss.item()

    base = {"impl": f"pytorch-{torch.__version__}", "threads": THREADS, "loss0": round(loss0, 6)}
    ms, mn = timed(step, N_STEPS)
    print(json.dumps({**base, "bench": "train", "ms_median": round(ms, 2), "ms_min": round(mn, 2),
                      "target_tokens_per_s": round(B * T / (ms / 1e3), 1)}))
    ms, mn = timed(lambda: greedy(p, src, T).tolist(), N_STEPS)
    print(json.dumps({**base, "bench": "greedy", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}))
    ms, mn = timed(lambda: beam(p, src, T).tolist(), N_STEPS)
    print(json.dumps({**base, "bench": "beam5", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}))


if __name__ == "__main__":
    main()
