//! The output side's GPU ops, run emulated on the host, against their CPU twins: the embedding
//! lookup (`lookup.rs`, `x_r = E[id_r] ⊙ m_r`, `E (V, m)`), the deep output (`deep_output.rs`,
//! Bahdanau et al. 2014 A.2.2, `t (N, l)` from `sc (N, K1)`, `ey (N, K2)`, `wb (K1+K2+1, w)`)
//! and the projection's loss (`proj_nll.rs`, `nll (N)` from `x (N, K)`, `W (K, V)` or tied
//! `Wᵀ (V, K)`, `b (V)`): the outputs and every input's gradient, under the loss `Σ out ⊙ w`.
//!
//! The lookup is checked for bit equality: it gathers and adds in the CPU op's order. The
//! other two are held to 1e-5 of each tensor's largest magnitude: their products run on a
//! different GEMM call (the emulation's one-thread `matmul` where the CPU op calls
//! `matmul_wide`, free to block the sums differently) and their `exp`/`tanh` are libm's where
//! the CPU's are its own polynomials (`kernels::math`, within a few ulp), so each element may
//! differ by a few ulp times the few dozen terms summed here (about 1e-6 of the tensor's scale);
//! a wrong index, transpose or order is off by the data's own scale (0.3 here).
use candle_core::{Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::config::OutputLayer;
use crate::kernels::fused_op::FusedOp;
use crate::kernels::gpu::emulated::{same_bits_in_any_order, Emulated, HostBuf};
use crate::kernels::gpu::launch::{Launch, Module, Staged};
use crate::kernels::gpu::recording::{Recording, Slot};
use crate::kernels::shapes::proj_weight::ProjWeight;

/// An `N(0, 0.3²)` variable of `shape`.
fn normal(rng: &mut ChaCha8Rng, shape: &[usize]) -> Var {
    let d = Normal::new(0.0f32, 0.3).unwrap();
    let v: Vec<f32> = (0..shape.iter().product()).map(|_| d.sample(rng)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

/// Inverted dropout's mask of `len` values: 0 or `1 / 0.7`.
fn keep_mask(rng: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect()
}

/// `out` and the gradients of `vars` under the loss `Σ out ⊙ w`, flat.
fn out_and_grads(out: &Tensor, w: &Tensor, vars: &[&Var]) -> Vec<Vec<f32>> {
    let grads = (out * w).unwrap().sum_all().unwrap().backward().unwrap();
    let mut all = vec![out.flatten_all().unwrap().to_vec1::<f32>().unwrap()];
    for v in vars {
        all.push(grads.get(v.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap());
    }
    all
}

/// The largest difference of each tensor pair relative to the CPU tensor's largest magnitude,
/// after checking it is within `bound`; printed with `what`.
fn max_rel(what: &str, got: &[Vec<f32>], want: &[Vec<f32>], bound: f32) -> Vec<f32> {
    assert_eq!(got.len(), want.len(), "{what}: tensor count");
    let mut worst = Vec::new();
    for (k, (a, e)) in got.iter().zip(want).enumerate() {
        assert_eq!(a.len(), e.len(), "{what}: tensor {k}'s length");
        let scale = e.iter().fold(0f32, |m, x| m.max(x.abs())).max(f32::MIN_POSITIVE);
        let (i, d) = a.iter().zip(e).map(|(x, y)| (x - y).abs()).enumerate().fold((0, 0f32), |m, (i, d)| if d > m.1 { (i, d) } else { m });
        let rel = d / scale;
        assert!(rel <= bound, "{what}: tensor {k} [{i}]: gpu {}, cpu {} ({rel:e} of the scale {scale})", a[i], e[i]);
        let bits = a.iter().zip(e).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        println!("{what}: tensor {k}: max relative difference {rel:e}, {bits} of {} elements not bit-equal", a.len());
        worst.push(rel);
    }
    worst
}

fn weights(rng: &mut ChaCha8Rng, shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), shape, &Device::Cpu).unwrap()
}

/// The lookup (`lookup.rs`) against `kernels::cpu::lookup`: repeated ids (their gradients added
/// in row order), with and without the mask; the rows and the table's gradient bit for bit.
#[test]
fn emulated_gpu_lookup_equals_the_cpu_op() {
    let mut rng = ChaCha8Rng::seed_from_u64(69);
    let (vocab, dim) = (7usize, 5usize);
    let ids = [3u32, 0, 3, 6, 1, 3, 0, 2, 6];
    for masked in [false, true] {
        let table = normal(&mut rng, &[vocab, dim]);
        let mask = keep_mask(&mut rng, ids.len() * dim);
        let mask = masked.then_some(&mask[..]);
        let w = weights(&mut rng, &[ids.len(), dim]);
        let run = |gpu: bool| {
            let out = match gpu {
                true => crate::kernels::gpu::lookup::lookup_op(table.as_tensor(), &ids, mask).unwrap(),
                false => crate::kernels::cpu::lookup::lookup_op(table.as_tensor(), &ids, mask).unwrap(),
            };
            out_and_grads(&out, &w, &[&table])
        };
        let worst = max_rel(&format!("lookup masked {masked}"), &same_bits_in_any_order(Module::Embedding, || run(true)), &run(false), 0.0);
        assert!(worst.iter().all(|&r| r == 0.0));
    }
}

/// A lookup's ids or mask that do not fit its table are refused with an error.
#[test]
fn emulated_gpu_lookup_refuses_ids_out_of_range() {
    let table = Tensor::zeros((4, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
    assert!(crate::kernels::gpu::lookup::lookup_op(&table, &[4], None).is_err());
    assert!(crate::kernels::gpu::lookup::lookup_op(&table, &[1, 2], Some(&[1.0; 5])).is_err());
}

/// The deep output (`deep_output.rs`) against `kernels::cpu::deep_output`: maxout and tanh, with
/// and without the mask; `t` and the gradients of `sc`, `ey` and `wb` within 1e-5.
#[test]
fn emulated_gpu_deep_output_equals_the_cpu_op() {
    let mut rng = ChaCha8Rng::seed_from_u64(70);
    let (n, k1, k2, units) = (6usize, 5usize, 4usize, 3usize);
    for layer in [OutputLayer::Maxout, OutputLayer::Tanh] {
        let w = if layer == OutputLayer::Maxout { 2 * units } else { units };
        for masked in [false, true] {
            let [sc, ey, wb] = [[n, k1], [n, k2], [k1 + k2 + 1, w]].map(|s| normal(&mut rng, &s));
            let mask = keep_mask(&mut rng, n * units);
            let mask = masked.then_some(&mask[..]);
            let lw = weights(&mut rng, &[n, units]);
            let run = |gpu: bool| {
                let (a, b, c) = (sc.as_tensor(), ey.as_tensor(), wb.as_tensor());
                let out = match gpu {
                    true => crate::kernels::gpu::deep_output::deep_output(a, b, c, layer, mask).unwrap(),
                    false => crate::kernels::cpu::deep_output::deep_output(a, b, c, layer, mask, crate::config::Precision::F32).unwrap(),
                };
                out_and_grads(&out, &lw, &[&sc, &ey, &wb])
            };
            max_rel(
                &format!("deep output {layer:?} masked {masked}"),
                &same_bits_in_any_order(Module::Output, || run(true)),
                &run(false),
                1e-5,
            );
        }
    }
}

/// The projection's loss (`proj_nll.rs`) against `kernels::cpu::proj_nll`: untied `W (K, V)` and
/// tied `Wᵀ (V, K)`, label smoothing 0 and 0.1, a vocabulary of 16-lane chunks and a tail; the
/// NLL and the gradients of `x`, `W` and `b` within 1e-5. (The CPU op takes no padding id: every
/// target is a word, so there are no padded targets to test.)
#[test]
fn emulated_gpu_proj_nll_equals_the_cpu_op() {
    let mut rng = ChaCha8Rng::seed_from_u64(71);
    let (n, k, v) = (7usize, 6usize, 37usize);
    for tied in [false, true] {
        for smoothing in [0.0, 0.1] {
            let x = normal(&mut rng, &[n, k]);
            let w = normal(&mut rng, &(if tied { [v, k] } else { [k, v] }));
            let b = normal(&mut rng, &[v]);
            let targets: Vec<u32> = (0..n).map(|_| rng.gen_range(0..v as u32)).collect();
            let lw = weights(&mut rng, &[n]);
            let run = |gpu: bool| {
                let pw = if tied { ProjWeight::Vk(w.as_tensor()) } else { ProjWeight::Kv(w.as_tensor()) };
                let (xt, bt) = (x.as_tensor(), b.as_tensor());
                let out = match gpu {
                    true => crate::kernels::gpu::proj_nll::proj_nll(xt, pw, bt, &targets, smoothing).unwrap(),
                    false => {
                        crate::kernels::cpu::proj_nll::proj_nll(xt, pw, bt, &targets, smoothing, crate::config::Precision::F32).unwrap()
                    }
                };
                out_and_grads(&out, &lw, &[&x, &w, &b])
            };
            max_rel(
                &format!("proj_nll tied {tied} smoothing {smoothing}"),
                &same_bits_in_any_order(Module::Output, || run(true)),
                &run(false),
                1e-5,
            );
        }
    }
}

/// `op`'s forward and backward passes on `l`, driven with addresses: the output and the three
/// inputs' gradients under the output gradient `dout`.
fn passes<L: Launch<Floats = HostBuf<f32>>, O: FusedOp<L>>(l: &L, op: &O, inputs: &[Vec<f32>; 3], dout: &[f32]) -> Vec<Vec<f32>> {
    let bufs = inputs.each_ref().map(|v| HostBuf::from_slice(v));
    let x = bufs.each_ref().map(|b| l.addr(b));
    let (out, saved) = op.forward(l, x).unwrap();
    let g = HostBuf::from_slice(dout);
    let grads = op.backward(l, x, saved, l.addr(&out), l.addr(&g)).unwrap();
    [out.to_vec()].into_iter().chain(grads.iter().map(HostBuf::to_vec)).collect()
}

/// `op`'s passes as [`passes`], inside a recorded step (`recording.rs`), which refuses every
/// upload: the inputs and `dout` staged into the bucket's buffers first.
fn recorded<O: for<'a> FusedOp<Recording<'a, Emulated>>>(
    op: &O,
    inputs: &[Vec<f32>; 3],
    dout: &[f32],
) -> candle_core::Result<Vec<Vec<f32>>> {
    let inner = Emulated;
    let rec = Recording::new(&inner);
    let staged = |v: &[f32]| -> candle_core::Result<Slot> {
        let s = rec.buffer(v.len())?;
        rec.stage(s, v)?;
        Ok(s)
    };
    let (bufs, g) = ([staged(&inputs[0])?, staged(&inputs[1])?, staged(&inputs[2])?], staged(dout)?);
    let x = bufs.map(|b| b.addr);
    let (out, grads) = rec.record(|r| {
        let (out, saved) = op.forward(r, x)?;
        let grads = op.backward(r, x, saved, out.addr, g.addr)?;
        Ok((out, grads))
    })?;
    [out].into_iter().chain(grads).map(|s| inner.read(s.addr, s.len)).collect()
}

/// The three ops driven as a recorded step drives them: ids, targets and masks handed as
/// [`Staged::Device`] buffers staged beforehand, inside a recording, which refuses every upload; the
/// same outputs and gradients, bit for bit, as with [`Staged::Host`] values uploaded by the op.
#[test]
fn staged_device_data_is_not_uploaded_again() {
    use crate::kernels::gpu::deep_output::DeepOutput;
    use crate::kernels::gpu::lookup::Lookup;
    use crate::kernels::gpu::proj_nll::ProjNll;
    let mut rng = ChaCha8Rng::seed_from_u64(72);
    let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.gen_range(-0.6f32..0.6)).collect() };
    let (n, k1, k2, units, vocab) = (5usize, 4usize, 3usize, 3usize, 21usize);
    let ids: Vec<i64> = vec![2, 7, 2, 20, 0];
    let mask: Vec<f32> = draw(n * units).iter().map(|&x| if x < -0.2 { 0.0 } else { 1.0 / 0.7 }).collect();
    let (ids_dev, mask_dev) = (Emulated.upload_ints(&ids).unwrap(), Emulated.upload(&mask).unwrap());
    let (ids_at, mask_at) = (Staged::Device(Emulated.ints_addr(&ids_dev)), Staged::Device(Emulated.addr(&mask_dev)));
    let host = |v: &Vec<f32>| Some(Staged::Host(v.clone()));

    let table = [draw(vocab * units), vec![0.0], vec![0.0]];
    let dout = draw(n * units);
    let lookup = |i, m| Lookup::new(i, m, n, (vocab, units));
    let want = passes(&Emulated, &lookup(Staged::Host(ids.clone()), host(&mask)), &table, &dout);
    assert_eq!(recorded(&lookup(ids_at.clone(), Some(mask_at.clone())), &table, &dout).unwrap(), want, "lookup");

    let deep = [draw(n * k1), draw(n * k2), draw((k1 + k2 + 1) * units)];
    let deep_op = |m| DeepOutput::new(n, (k1, k2, units), OutputLayer::Tanh, m);
    let want = passes(&Emulated, &deep_op(host(&mask)), &deep, &dout);
    assert_eq!(recorded(&deep_op(Some(mask_at.clone())), &deep, &dout).unwrap(), want, "deep output");

    let proj = [draw(n * k1), draw(vocab * k1), draw(vocab)];
    let dnll = draw(n);
    let proj_op = |t| ProjNll::new(t, (n, k1, vocab), 0.1, true);
    let want = passes(&Emulated, &proj_op(Staged::Host(ids.clone())), &proj, &dnll);
    assert_eq!(recorded(&proj_op(ids_at), &proj, &dnll).unwrap(), want, "proj_nll");
    // The recording does refuse: host values fail inside it.
    let err = recorded(&lookup(Staged::Host(ids.clone()), None), &table, &dout).unwrap_err();
    assert!(err.to_string().contains("upload inside a recorded step"), "{err}");
}

/// The linear op (`gpu/linear.rs`, `y = x W + b`) against its CPU twin (`kernels::cpu::linear`).
mod linear {
    use candle_core::{Device, Tensor, Var};
    use rand::{Rng, SeedableRng};

    use crate::config::Precision;
    use crate::kernels::gpu::linear::*;

    /// `(N, K, M)`: a single element, odd sizes, and sizes past the GEMM's blocks.
    const SHAPES: [(usize, usize, usize); 4] = [(1, 1, 1), (7, 5, 9), (33, 17, 40), (70, 130, 300)];

    fn random(rng: &mut impl Rng, shape: &[usize]) -> Var {
        let v: Vec<f32> = (0..shape.iter().product()).map(|_| rng.gen_range(-1f32..1.0)).collect();
        Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
    }

    /// `x`, `W`, `b` and the loss's weights `r (N, M)` for one shape.
    fn inputs(rng: &mut impl Rng, (n, k, m): (usize, usize, usize)) -> ([Var; 3], Tensor) {
        let vars = [random(rng, &[n, k]), random(rng, &[k, m]), random(rng, &[m])];
        (vars, random(rng, &[n, m]).as_tensor().clone())
    }

    /// `y` and the gradients of `x`, `W`, `b` under the loss `Σ y ⊙ r`: the GPU op (emulated) in
    /// `Some(precision)`, or the CPU op (`kernels::cpu::linear`) in f32.
    fn run(vars: &[Var; 3], r: &Tensor, gpu: Option<Precision>) -> [Vec<f32>; 4] {
        let [x, w, b] = vars.each_ref().map(|v| v.as_tensor());
        let y = match gpu {
            Some(p) => linear(x, w, b, p).unwrap(),
            None => crate::kernels::cpu::linear::linear(x, w, b, Precision::F32).unwrap(),
        };
        let grads = (&y * r).unwrap().sum_all().unwrap().backward().unwrap();
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        [flat(&y), flat(grads.get(x).unwrap()), flat(grads.get(w).unwrap()), flat(grads.get(b).unwrap())]
    }

    /// The GPU op in f32 against the CPU op: the output and the three gradients bit for bit
    /// (the same f32 GEMM on the same operands, the bias as its initial value, `db` summed row
    /// by row from zero on both).
    #[test]
    fn emulated_gpu_linear_equals_the_cpu_op() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(69);
        for shape in SHAPES {
            let (vars, r) = inputs(&mut rng, shape);
            let (want, got) = (run(&vars, &r, None), run(&vars, &r, Some(Precision::F32)));
            for (t, (g, e)) in ["y", "dx", "dW", "db"].iter().zip(got.iter().zip(&want)) {
                assert_eq!(g.len(), e.len(), "{shape:?} {t}");
                for (i, (a, b)) in g.iter().zip(e).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{shape:?} {t}[{i}]: gpu {a}, cpu {b}");
                }
            }
        }
    }

    fn bf16(x: f32) -> f64 {
        half::bf16::from_f32(x).to_f64()
    }

    /// The GPU op in bf16 multiplies the operands rounded to bf16 with f32 sums: each of `y`,
    /// `dx`, `dW` against the f64 sum of the rounded operands' products (`b` added unrounded,
    /// as the product's initial value), within `(terms + 1)·2⁻²⁴·Σ|term|` — the products of
    /// two bf16 numbers are exact in f32, so what is left is the f32 sums' rounding, at most
    /// one unit of 2⁻²⁴ per addition of the running sum's magnitude. `db` sums `dy` unrounded,
    /// as the CPU op does. And it is not the f32 op: rounding moved some output.
    #[test]
    fn emulated_gpu_linear_in_bf16_multiplies_rounded_operands() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(70);
        let mut moved = false;
        for (n, k, m) in SHAPES {
            let (vars, r) = inputs(&mut rng, (n, k, m));
            let got = run(&vars, &r, Some(Precision::Bf16));
            moved |= got[0] != run(&vars, &r, Some(Precision::F32))[0];
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let [x, w, b] = vars.each_ref().map(|v| flat(v.as_tensor()));
            let r = flat(&r);
            // Each output: its terms `(a, b)`, and an initial value; the sum's bound.
            let check = |what: &str, got: f32, init: f64, terms: &mut dyn Iterator<Item = (f64, f64)>| {
                let (mut sum, mut abs, mut count) = (init, init.abs(), 1f64);
                for (p, q) in terms {
                    sum += p * q;
                    abs += (p * q).abs();
                    count += 1.0;
                }
                let bound = count * 2f64.powi(-24) * abs;
                assert!((got as f64 - sum).abs() <= bound, "{what}: gpu {got}, rounded operands' sum {sum}, bound {bound}");
            };
            for (i, j) in (0..n).flat_map(|i| (0..m).map(move |j| (i, j))) {
                let t = &mut (0..k).map(|kk| (bf16(x[i * k + kk]), bf16(w[kk * m + j])));
                check(&format!("({n}, {k}, {m}) y[{i}][{j}]"), got[0][i * m + j], b[j] as f64, t);
            }
            for (i, kk) in (0..n).flat_map(|i| (0..k).map(move |kk| (i, kk))) {
                let t = &mut (0..m).map(|j| (bf16(r[i * m + j]), bf16(w[kk * m + j])));
                check(&format!("({n}, {k}, {m}) dx[{i}][{kk}]"), got[1][i * k + kk], 0.0, t);
            }
            for (kk, j) in (0..k).flat_map(|kk| (0..m).map(move |j| (kk, j))) {
                let t = &mut (0..n).map(|i| (bf16(x[i * k + kk]), bf16(r[i * m + j])));
                check(&format!("({n}, {k}, {m}) dW[{kk}][{j}]"), got[2][kk * m + j], 0.0, t);
            }
            for j in 0..m {
                check(&format!("({n}, {k}, {m}) db[{j}]"), got[3][j], 0.0, &mut (0..n).map(|i| (r[i * m + j] as f64, 1.0)));
            }
        }
        assert!(moved, "bf16 products gave the f32 op's outputs everywhere");
    }
}
