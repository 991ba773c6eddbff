//! The preset `bench-rnnsearch` with the PyTorch reference's weights computes the reference's
//! loss: checked against a line-by-line port of `bench/pytorch/pytorch_rnnsearch.py`'s
//! `forward_loss` in composed candle ops, on weights and a batch drawn like `gen_data.py`'s and
//! written in its file format. And `nmt bench`'s harness runs: every search does the full 30
//! steps (it checks that itself) and training moves the loss.
use std::path::Path;

use candle_core::{DType, Device, Tensor, D};
use nmt::bench::reference::{self, BATCH, PARAMS, REF_BOS, SRC_LEN, TGT_LEN};
use nmt::bench::run::{run, BenchOptions};
use nmt::config::Impl;
use nmt::model::BatchTensors;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const H: usize = 256;

/// Writes `init.bin` and `batch.bin` in gen_data.py's format (weights U(−0.1, 0.1), ids in
/// [3, 8000)); returns the flat weights and the ids.
fn write_reference(dir: &Path) -> (Vec<f32>, Vec<i32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut flat = Vec::new();
    for (_, shape) in PARAMS {
        // Biases are drawn too (gen_data.py zeroes them), so that a bias mapped to the wrong
        // place shows.
        let n: usize = shape.iter().product();
        flat.extend((0..n).map(|_| rng.gen_range(-0.1f32..0.1)));
    }
    let ids: Vec<i32> = (0..BATCH * (SRC_LEN + TGT_LEN)).map(|_| rng.gen_range(3..8000)).collect();
    std::fs::write(dir.join("init.bin"), flat.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    std::fs::write(dir.join("batch.bin"), ids.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    (flat, ids)
}

/// `pytorch_rnnsearch.py`'s `forward_loss`, op by op.
fn reference_loss(flat: &[f32], ids: &[i32]) -> f32 {
    let dev = Device::Cpu;
    let mut p = std::collections::HashMap::new();
    let mut off = 0;
    for (name, shape) in PARAMS {
        let n: usize = shape.iter().product();
        p.insert(name, Tensor::from_slice(&flat[off..off + n], shape, &dev).unwrap());
        off += n;
    }
    let g = |n: &str| p[n].clone();
    let gru = |gi: &Tensor, h: &Tensor, whh: &Tensor, bhh: &Tensor| -> Tensor {
        let gh = h.matmul(whh).unwrap().broadcast_add(bhh).unwrap();
        let part = |t: &Tensor, i: usize| t.narrow(1, i * H, H).unwrap();
        let r = candle_nn::ops::sigmoid(&(part(gi, 0) + part(&gh, 0)).unwrap()).unwrap();
        let z = candle_nn::ops::sigmoid(&(part(gi, 1) + part(&gh, 1)).unwrap()).unwrap();
        let n = (part(gi, 2) + (r * part(&gh, 2)).unwrap()).unwrap().tanh().unwrap();
        (&n + (z * (h - &n).unwrap()).unwrap()).unwrap()
    };
    let ids: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
    let src = Tensor::from_slice(&ids[..BATCH * SRC_LEN], BATCH * SRC_LEN, &dev).unwrap();
    let tgt = &ids[BATCH * SRC_LEN..];
    let tgt_in: Vec<u32> = tgt.chunks(TGT_LEN).flat_map(|r| std::iter::once(REF_BOS).chain(r[..TGT_LEN - 1].iter().copied())).collect();
    let xs = g("src_emb").index_select(&src, 0).unwrap();
    let gi = |w: &str, b: &str| xs.matmul(&g(w)).unwrap().broadcast_add(&g(b)).unwrap().reshape((BATCH, SRC_LEN, 3 * H)).unwrap();
    let (gi_f, gi_b) = (gi("enc_f_wih", "enc_f_bih"), gi("enc_b_wih", "enc_b_bih"));
    let at = |t: &Tensor, i: usize| t.narrow(1, i, 1).unwrap().squeeze(1).unwrap();
    let mut h = Tensor::zeros((BATCH, H), DType::F32, &dev).unwrap();
    let mut hf = Vec::new();
    for t in 0..SRC_LEN {
        h = gru(&at(&gi_f, t), &h, &g("enc_f_whh"), &g("enc_f_bhh"));
        hf.push(h.clone());
    }
    let mut h = Tensor::zeros((BATCH, H), DType::F32, &dev).unwrap();
    let mut hb = vec![h.clone(); SRC_LEN];
    for t in (0..SRC_LEN).rev() {
        h = gru(&at(&gi_b, t), &h, &g("enc_b_whh"), &g("enc_b_bhh"));
        hb[t] = h.clone();
    }
    let hs = Tensor::cat(&[Tensor::stack(&hf, 1).unwrap(), Tensor::stack(&hb, 1).unwrap()], 2).unwrap();
    let mut s = hb[0].matmul(&g("init_w")).unwrap().broadcast_add(&g("init_b")).unwrap().tanh().unwrap();
    let uh = hs.reshape((BATCH * SRC_LEN, 2 * H)).unwrap().matmul(&g("att_u")).unwrap().reshape((BATCH, SRC_LEN, H)).unwrap();
    let tin = Tensor::from_slice(&tgt_in, BATCH * TGT_LEN, &dev).unwrap();
    let ys = g("tgt_emb").index_select(&tin, 0).unwrap();
    let gie = ys.matmul(&g("dec_wie")).unwrap().broadcast_add(&g("dec_bih")).unwrap().reshape((BATCH, TGT_LEN, 3 * H)).unwrap();
    let (mut states, mut ctxs) = (Vec::new(), Vec::new());
    for i in 0..TGT_LEN {
        let ws = s.matmul(&g("att_w")).unwrap().broadcast_add(&g("att_b")).unwrap();
        let x = uh.broadcast_add(&ws.unsqueeze(1).unwrap()).unwrap().tanh().unwrap();
        let e = x.reshape((BATCH * SRC_LEN, H)).unwrap().matmul(&g("att_v")).unwrap().reshape((BATCH, SRC_LEN)).unwrap();
        let a = candle_nn::ops::softmax(&e, 1).unwrap();
        let c = a.unsqueeze(1).unwrap().matmul(&hs).unwrap().squeeze(1).unwrap();
        s = gru(&(at(&gie, i) + c.matmul(&g("dec_wic")).unwrap()).unwrap(), &s, &g("dec_whh"), &g("dec_bhh"));
        states.push(s.clone());
        ctxs.push(c);
    }
    let st = Tensor::stack(&states, 1).unwrap().reshape((BATCH * TGT_LEN, H)).unwrap();
    let cs = Tensor::stack(&ctxs, 1).unwrap().reshape((BATCH * TGT_LEN, 2 * H)).unwrap();
    let t = Tensor::cat(&[&st, &ys, &cs], 1).unwrap().matmul(&g("out_w")).unwrap().broadcast_add(&g("out_b")).unwrap();
    let t = t.reshape((BATCH * TGT_LEN, H, 2)).unwrap().max(D::Minus1).unwrap();
    let logits = t.matmul(&g("proj_w")).unwrap().broadcast_add(&g("proj_b")).unwrap();
    let lp = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
    let tt = Tensor::from_slice(tgt, BATCH * TGT_LEN, &dev).unwrap().to_dtype(DType::U32).unwrap();
    let picked = lp.gather(&tt.unsqueeze(1).unwrap(), 1).unwrap();
    picked.mean_all().unwrap().neg().unwrap().to_scalar::<f32>().unwrap()
}

#[test]
fn preset_with_reference_weights_computes_the_reference_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let (flat, ids) = write_reference(tmp.path());
    let want = reference_loss(&flat, &ids);
    let mut model = reference::model(Some(tmp.path()), &Device::Cpu).unwrap();
    let bt = BatchTensors::new(&reference::batch(Some(tmp.path())).unwrap(), DType::F32, &Device::Cpu).unwrap();
    for imp in [Impl::Fused, Impl::Composed] {
        model.set_impl(imp);
        let got = model.loss(&bt, None).unwrap().mean.to_scalar::<f32>().unwrap();
        eprintln!("{imp:?}: {got} vs reference port {want}");
        assert!((got - want).abs() < 2e-5 * want.abs(), "{imp:?}: {got} vs {want}");
    }
}

#[test]
fn bench_harness_runs_the_real_model() {
    let opts = BenchOptions {
        data: None,
        steps: 1,
        imp: Impl::Fused,
        only: vec!["train".into(), "greedy".into(), "beam5".into()],
        preset: "bench-rnnsearch".into(),
        overrides: vec![],
        int8: false,
        precision: Default::default(),
        device: candle_core::Device::Cpu,
        batch: 32,
        candidates: None,
    };
    let out = run(&opts).unwrap();
    let get = |b: &str| out.iter().find(|v| v["bench"] == b).unwrap_or_else(|| panic!("no {b} line"));
    let train = get("train");
    assert!(train["loss_last"].as_f64().unwrap() < train["loss0"].as_f64().unwrap(), "{train}");
    assert!(get("greedy")["sentences_per_s"].as_f64().unwrap() > 0.0);
    assert!(get("beam5")["sentences_per_s"].as_f64().unwrap() > 0.0);
    // `--batch 64`: the reference batch twice, the same mean loss over twice the tokens.
    let double = run(&BenchOptions { batch: 64, only: vec!["train".into()], ..opts.clone() }).unwrap();
    let d = double.iter().find(|v| v["bench"] == "train").unwrap();
    assert_eq!(d["batch"], 64, "{d}");
    assert!((d["loss0"].as_f64().unwrap() - train["loss0"].as_f64().unwrap()).abs() < 1e-5, "{d} against {train}");
    assert!(run(&BenchOptions { batch: 48, ..opts }).is_err(), "a batch that is not a multiple of 32");
}

#[test]
fn bench_overrides_change_the_timed_model() {
    let opts = |overrides: &[&str], preset: &str| BenchOptions {
        data: None,
        steps: 1,
        imp: Impl::Fused,
        only: vec!["greedy".into()],
        preset: preset.into(),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        int8: false,
        precision: Default::default(),
        device: candle_core::Device::Cpu,
        batch: 32,
        candidates: None,
    };
    let loss0 = |o: &BenchOptions| run(o).unwrap()[0]["loss0"].as_f64().unwrap();
    // Larger initial weights move the untrained loss away from ln 32 (tiny's vocabulary):
    // the override reached the timed model.
    let (plain, wide) = (loss0(&opts(&[], "tiny")), loss0(&opts(&["model.init_std=0.5"], "tiny")));
    assert!((plain - 32f64.ln()).abs() < 1e-3 && (wide - plain).abs() > 1e-2, "loss0 {plain} vs {wide}");
    let out = run(&opts(&["model.cell=lstm", "model.enc_layers=2"], "tiny")).unwrap();
    assert_eq!(out[0]["set"][0], "model.cell=lstm", "{}", out[0]);
    // Only model keys; never the reference's fixed model; a bad value is reported by name.
    let err = |o: BenchOptions| run(&o).unwrap_err().to_string();
    assert!(err(opts(&["train.lr=1"], "tiny")).contains("model.*"));
    assert!(err(opts(&["model.cell=lstm"], "bench-rnnsearch")).contains("fixed sizes"));
    assert!(err(opts(&["model.cell=tree"], "tiny")).contains("tree"));
    assert!(err(opts(&["model.tgt_vocab=3"], "tiny")).contains("special tokens"));
}
