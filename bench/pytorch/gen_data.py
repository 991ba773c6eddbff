# Generates identical initial weights and data for every framework benchmark of bench-rnnsearch
# (the model of pytorch_rnnsearch.py, beside this file; equations in docs/MODELS.md).
# Plain Python (no numpy) so it runs anywhere. Output: data/init.bin (f32 LE, params in
# the fixed order below, row-major, weights stored as [in, out]), data/batch.bin (i32 LE:
# src[32*30] then tgt[32*30]). The directory is $BENCH_DATA, or data/ next to this file.
#   BENCH_DATA=target/bench-data python3 bench/pytorch/gen_data.py
import random, struct, array, os, sys
V_S = V_T = 8000; E = 256; H = 256; A = 256; B = 32; S = 30; T = 30
PARAMS = [
    ("src_emb", (V_S, E)),
    ("enc_f_wih", (E, 3*H)), ("enc_f_whh", (H, 3*H)), ("enc_f_bih", (3*H,)), ("enc_f_bhh", (3*H,)),
    ("enc_b_wih", (E, 3*H)), ("enc_b_whh", (H, 3*H)), ("enc_b_bih", (3*H,)), ("enc_b_bhh", (3*H,)),
    ("init_w", (H, H)), ("init_b", (H,)),
    ("att_u", (2*H, A)), ("att_w", (H, A)), ("att_b", (A,)), ("att_v", (A, 1)),
    ("tgt_emb", (V_T, E)),
    ("dec_wie", (E, 3*H)), ("dec_wic", (2*H, 3*H)), ("dec_whh", (H, 3*H)), ("dec_bih", (3*H,)), ("dec_bhh", (3*H,)),
    ("out_w", (H + E + 2*H, 2*H)), ("out_b", (2*H,)),   # maxout: 2H -> H
    ("proj_w", (H, V_T)), ("proj_b", (V_T,)),
]
if __name__ == "__main__":  # writes data/ next to this file, or into $BENCH_DATA
    d = os.environ.get("BENCH_DATA") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(d, exist_ok=True)
    rng = random.Random(1234)
    buf = array.array("f")
    for name, shape in PARAMS:
        n = 1
        for s in shape: n *= s
        if len(shape) == 1:
            buf.extend([0.0] * n)
        else:
            buf.extend([rng.uniform(-0.1, 0.1) for _ in range(n)])
    assert sys.byteorder == "little"
    with open(os.path.join(d, "init.bin"), "wb") as f:
        buf.tofile(f)
    ids = array.array("i", [rng.randrange(3, V_S) for _ in range(B*S)] + [rng.randrange(3, V_T) for _ in range(B*T)])
    with open(os.path.join(d, "batch.bin"), "wb") as f:
        ids.tofile(f)
    print("params:", len(buf))
