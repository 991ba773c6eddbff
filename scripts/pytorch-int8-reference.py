#!/usr/bin/env python3
"""The PyTorch reference of bench-rnnsearch (bench/pytorch/pytorch_rnnsearch.py) searching with
PyTorch's own int8: every product with a weight matrix runs as `torch.ops.quantized.linear_dynamic`
(the op behind `torch.ao.nn.quantized.dynamic.Linear`, i.e. `quantize_dynamic`, PyTorch's
documented int8 path for CPU inference of RNNs and linear layers): weights quantised once per
output channel (symmetric qint8, FBGEMM's packed layout), activations quantised per call, int32
accumulation. What stays f32 is what our `--int8` keeps in f32 too, or has no weight: the
attention's `v_a` column, softmax, the context's weighted sum.

So `nmt bench --int8` can be compared with PyTorch at int8 as well as at f32
(`INT8=1 scripts/bench-vs-pytorch.sh`). Same weights, batch and loops as the reference; prints
its JSON lines (`greedy`, `beam5`) with `"impl": "pytorch-<version>-int8-dynamic"`, and the
share of the batch whose first greedy word is the f32 reference's (`step1_agreement`: a check
that the quantised model is the same model; the bench's weights are random and small, so its
logits are close and a whole greedy run drifts further apart than a trained model's would).
Env: as the reference (THREADS, STEPS, BENCH_DATA), plus BENCH_REF (its folder).
"""
import json
import os
import sys

import numpy as np
import torch

REF = os.environ.get("BENCH_REF") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "pytorch")
sys.path.insert(0, os.path.abspath(REF))
import pytorch_rnnsearch as ref  # noqa: E402
from gen_data import B, S, T, H  # noqa: E402

# The reference's matrices that multiply activations ([in, out]), with their biases.
PRODUCTS = {
    "enc_f_wih": "enc_f_bih", "enc_b_wih": "enc_b_bih", "enc_f_whh": "enc_f_bhh", "enc_b_whh": "enc_b_bhh",
    "init_w": "init_b", "att_u": None, "att_w": "att_b", "dec_wie": "dec_bih", "dec_wic": None,
    "dec_whh": "dec_bhh", "out_w": "out_b", "proj_w": "proj_b",
}
PACKED = {}


def pack(p):
    """Each matrix once: per-output-channel symmetric qint8, prepacked for FBGEMM."""
    torch.backends.quantized.engine = "fbgemm"
    for w, b in PRODUCTS.items():
        wt = p[w].detach().t().contiguous()  # (out, in), as nn.Linear stores it
        scale = (wt.abs().amax(1) / 127.0).clamp(min=1e-12).double()
        qw = torch.quantize_per_channel(wt, scale, torch.zeros_like(scale, dtype=torch.long), 0, torch.qint8)
        bias = p[b].detach().contiguous() if b else None
        PACKED[w] = torch.ops.quantized.linear_prepack(qw, bias)


def lin(name, x):
    """`x @ p[name] (+ its bias)` in int8; reduce_range as quantize_dynamic's FBGEMM default."""
    shape = x.shape
    y = torch.ops.quantized.linear_dynamic(x.reshape(-1, shape[-1]).contiguous(), PACKED[name], True)
    return y.reshape(*shape[:-1], y.shape[-1])


def gru(gi, h, whh):
    gh = lin(whh, h)
    r = torch.sigmoid(gi[:, :H] + gh[:, :H])
    z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return n + z * (h - n)


def encode(p, src):
    b, s = src.shape
    xs = p["src_emb"][src.reshape(-1)]
    gi_f = lin("enc_f_wih", xs).reshape(b, s, 3 * H)
    gi_b = lin("enc_b_wih", xs).reshape(b, s, 3 * H)
    h = torch.zeros(b, H)
    hf = []
    for t in range(s):
        h = gru(gi_f[:, t], h, "enc_f_whh")
        hf.append(h)
    h = torch.zeros(b, H)
    hb = [None] * s
    for t in reversed(range(s)):
        h = gru(gi_b[:, t], h, "enc_b_whh")
        hb[t] = h
    hs = torch.cat([torch.stack(hf, 1), torch.stack(hb, 1)], 2)
    s0 = torch.tanh(lin("init_w", hb[0]))
    uh = lin("att_u", hs)
    return hs, uh, s0


def attend(p, hs, uh, s, mask_bias):
    b, sl, a = uh.shape
    x = torch.tanh(uh + lin("att_w", s).unsqueeze(1))
    e = (x.reshape(b * sl, a) @ p["att_v"]).reshape(b, sl) + mask_bias
    return torch.bmm(torch.softmax(e, 1).unsqueeze(1), hs).squeeze(1)


def decoder_step(p, hs, uh, s, mask_bias, y):
    c = attend(p, hs, uh, s, mask_bias)
    ey = p["tgt_emb"][y]
    s = gru(lin("dec_wie", ey) + lin("dec_wic", c), s, "dec_whh")
    t = lin("out_w", torch.cat([s, ey, c], 1))
    t = t.reshape(t.shape[0], H, 2).amax(2)
    return s, torch.log_softmax(lin("proj_w", t), -1)


def main():
    ids = np.fromfile(os.path.join(ref.DATA, "batch.bin"), dtype="<i4").astype(np.int64)
    src = torch.from_numpy(ids[:B * S].reshape(B, S).copy())
    p = ref.load_params()
    with torch.no_grad():
        want = ref.greedy(p, src, 1)
        pack(p)
        # The reference's loops, stepping this file's int8 model.
        ref.encode, ref.decoder_step = encode, decoder_step
        got = ref.greedy(p, src, 1)
    agree = float((want == got).float().mean())
    base = {"impl": f"pytorch-{torch.__version__}-int8-dynamic", "threads": ref.THREADS, "step1_agreement": round(agree, 4)}
    ms, mn = ref.timed(lambda: ref.greedy(p, src, T).tolist(), ref.N_STEPS)
    print(json.dumps({**base, "bench": "greedy", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}))
    ms, mn = ref.timed(lambda: ref.beam(p, src, T).tolist(), ref.N_STEPS)
    print(json.dumps({**base, "bench": "beam5", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "sentences_per_s": round(B / (ms / 1e3), 1)}))


if __name__ == "__main__":
    main()
