//! Lexical shortlists and int8 search (issue "int8 GEMMs and a lexical shortlist"):
//! - a shortlist holding every word searches exactly as the full vocabulary, on the host and
//!   on the candle scorer, and a real one restricts the output to its candidates;
//! - a shortlist survives the model file, and `nmt_data`'s learner's output loads back;
//! - a model file stored in int8 translates as the `f32` model quantised at load;
//! - a copy model refuses a shortlist with an error;
//! - a search splitting its steps across threads finds what one thread finds.
mod common;

use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Impl, SearchConfig};
use nmt::data::{Shortlist, ShortlistSpec, EOS};
use nmt::model::Seq2Seq;
use nmt::search::{Hypothesis, SearchOptions, Searcher};

const VOCAB: usize = 30;

fn model(arch: ArchName, seed: u64) -> Seq2Seq {
    let mut cfg = common::small_config(arch, VOCAB, 16, 24);
    cfg.init_std = 0.3;
    let m = Seq2Seq::fresh(&cfg, seed, DType::F32, &Device::Cpu).unwrap();
    let (_, b_g) = m.params.named_vars().into_iter().find(|(n, _)| n == "output.b_g").unwrap();
    let mut bias: Vec<f32> = b_g.as_tensor().to_vec1().unwrap();
    bias[EOS as usize] += 1.0;
    b_g.set(&Tensor::new(bias, &Device::Cpu).unwrap()).unwrap();
    m
}

fn sources() -> Vec<Vec<u32>> {
    common::reversal_examples(9, 20, 2..=7, 3).into_iter().map(|e| e.src).collect()
}

fn search(s: &Searcher<&Seq2Seq>, beam: usize, shortlist: bool, int8: bool, imp: Impl) -> Vec<Vec<Hypothesis>> {
    let cfg = SearchConfig { beam_size: beam, n_best: beam.min(3), shortlist, int8, ..SearchConfig::default() };
    s.search(&sources(), None, &SearchOptions { cfg, alignments: false, imp }).unwrap()
}

fn assert_same(a: &[Vec<Hypothesis>], b: &[Vec<Hypothesis>], what: &str) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len(), "{what}");
        for (h, g) in x.iter().zip(y) {
            assert_eq!(h.tokens, g.tokens, "{what}");
            assert!((h.log_prob - g.log_prob).abs() < 1e-5, "{what}: {} vs {}", h.log_prob, g.log_prob);
        }
    }
}

/// A shortlist whose every source token lists every target token.
fn everything() -> Arc<Shortlist> {
    let cands: Vec<u32> = (0..VOCAB).flat_map(|_| 0..VOCAB as u32).collect();
    Arc::new(Shortlist::from_parts(VOCAB, cands, vec![], VOCAB, VOCAB).unwrap())
}

#[test]
fn a_shortlist_of_every_word_searches_as_the_full_vocabulary() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let m = model(arch, 7);
        let s = Searcher::new(vec![&m]).unwrap().with_shortlist(Some(everything()));
        for imp in [Impl::Fused, Impl::Composed] {
            for beam in [1, 5] {
                let what = format!("{arch:?} {imp:?} beam {beam}");
                assert_same(&search(&s, beam, false, false, imp), &search(&s, beam, true, false, imp), &what);
            }
        }
    }
}

#[test]
fn a_real_shortlist_keeps_the_output_inside_its_candidates_on_both_scorers() {
    let m = model(ArchName::Rnnsearch, 11);
    // Source token w translates to w + 1 only; nothing is frequent.
    let pairs: Vec<(Vec<u32>, Vec<u32>)> =
        (0..200u32).map(|i| (vec![4 + i % 20, 4 + (i * 7) % 20, EOS], vec![5 + i % 20, 5 + (i * 7) % 20, EOS])).collect();
    let sl = Shortlist::learn(&pairs, VOCAB, VOCAB, &ShortlistSpec { k: 1, frequent: 0, iterations: 5 }).unwrap();
    let s = Searcher::new(vec![&m]).unwrap().with_shortlist(Some(Arc::new(sl.clone())));
    let (fused, ops) = (search(&s, 5, true, false, Impl::Fused), search(&s, 5, true, false, Impl::Composed));
    assert_same(&fused, &ops, "shortlisted host vs candle");
    // The batch's candidates: every source token's translation, `<unk>` and `</s>`.
    let all: Vec<u32> = sources().concat();
    let allowed = sl.candidates(&all);
    for h in fused.iter().flatten() {
        assert!(h.tokens.iter().all(|t| allowed.contains(t)), "{:?} outside {allowed:?}", h.tokens);
    }
}

#[test]
fn shortlists_and_int8_weights_survive_the_model_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let m = Seq2Seq::fresh(&cfg, 3, DType::F32, &Device::Cpu).unwrap();
    let v = cfg.tgt_vocab as u32;
    let cands: Vec<u32> = (0..cfg.src_vocab as u32).flat_map(|s| [s % v, (s + 1) % v]).collect();
    meta.shortlist = Some(Arc::new(Shortlist::from_parts(2, cands, vec![4, 5], cfg.src_vocab, cfg.tgt_vocab).unwrap()));
    let path = dir.path().join("m.safetensors");
    nmt::model_file::save(&path, &m, &meta).unwrap();
    let back = nmt::model_file::load(&path, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(back.meta.shortlist, meta.shortlist);

    // The int8 file: every matrix in int8, the search defaults saying int8.
    let mut q = meta.clone();
    q.search.int8 = true;
    let tensors = nmt::quantize::quantize_tensors(&nmt::model_file::model_tensors(&m)).unwrap();
    let qpath = dir.path().join("m.int8.safetensors");
    nmt::model_file::save_tensors(&qpath, tensors, &q).unwrap();
    // Every matrix is stored as bytes with its scales.
    let (raw, _) = nmt::model_file::parse_safetensors(&std::fs::read(&qpath).unwrap(), &qpath, &Device::Cpu).unwrap();
    for (name, t) in raw.iter().filter(|(n, t)| t.rank() == 2 && !n.starts_with("shortlist.")) {
        assert_eq!(t.dtype(), DType::U8, "{name}");
        // Embedding tables scaled by rows, every other matrix by output columns.
        let suffix = if name.ends_with("_emb") { nmt::quantize::SCALE_SUFFIX } else { nmt::quantize::COLUMN_SCALE_SUFFIX };
        assert!(raw.contains_key(&format!("{name}{suffix}")), "{name} has no scales");
    }
    let loaded = nmt::model_file::load(&qpath, DType::F32, &Device::Cpu).unwrap();
    assert!(loaded.meta.search.int8);
    assert_eq!(loaded.meta.shortlist, meta.shortlist);
    // Quantising the loaded (already quantised) weights again changes nothing.
    let again = nmt::quantize::quantized_model(&loaded.model).unwrap();
    for ((name, a), (_, b)) in nmt::model_file::model_tensors(&loaded.model).iter().zip(nmt::model_file::model_tensors(&again)) {
        let d = (a - &b).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar::<f32>().unwrap();
        assert_eq!(d, 0.0, "{name} moved by {d}");
    }
}

#[test]
fn an_int8_file_translates_as_the_f32_model_quantised_at_load() {
    let dir = tempfile::tempdir().unwrap();
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let m = model(arch, 5);
        let path = dir.path().join(format!("{arch:?}.int8.safetensors"));
        let (mut meta, _) = common::tiny_meta(arch);
        meta.config = m.cfg.clone();
        let tensors = nmt::quantize::quantize_tensors(&nmt::model_file::model_tensors(&m)).unwrap();
        nmt::model_file::save_tensors(&path, tensors, &meta).unwrap();
        let loaded = nmt::model_file::load(&path, DType::F32, &Device::Cpu).unwrap();
        let (a, b) = (Searcher::new(vec![&m]).unwrap(), Searcher::new(vec![&loaded.model]).unwrap());
        for beam in [1, 5] {
            let at_load = search(&a, beam, false, true, Impl::Fused);
            assert_same(&at_load, &search(&b, beam, false, true, Impl::Fused), &format!("{arch:?} int8 file, beam {beam}"));
            // int8 stays close to f32: the same best hypothesis for most sentences.
            let f32s = search(&a, beam, false, false, Impl::Fused);
            let same = at_load.iter().zip(&f32s).filter(|(x, y)| x[0].tokens == y[0].tokens).count();
            assert!(same * 2 > f32s.len(), "{arch:?} beam {beam}: int8 agrees with f32 on {same} of {}", f32s.len());
        }
    }
}

#[test]
fn a_copy_model_or_a_missing_shortlist_is_an_error() {
    let m = model(ArchName::Rnnsearch, 2);
    let s = Searcher::new(vec![&m]).unwrap();
    let cfg = SearchConfig { shortlist: true, ..SearchConfig::default() };
    let err = s.search(&sources(), None, &SearchOptions { cfg: cfg.clone(), alignments: false, imp: Impl::Fused }).unwrap_err();
    assert!(err.to_string().contains("no lexical shortlist"), "{err}");
    let mut c = common::small_config(ArchName::Rnnsearch, VOCAB, 16, 24);
    common::with_copy(&mut c);
    let copy = Seq2Seq::fresh(&c, 1, DType::F32, &Device::Cpu).unwrap();
    let s = Searcher::new(vec![&copy]).unwrap().with_shortlist(Some(everything()));
    let srcs = sources();
    let exts = srcs.clone();
    let err = s.search(&srcs, Some(&exts), &SearchOptions { cfg, alignments: false, imp: Impl::Fused }).unwrap_err();
    assert!(err.to_string().contains("copy models"), "{err}");
}

#[test]
fn a_step_split_across_threads_searches_as_on_one_thread() {
    // The host scorer splits a step's live rows into one share per thread (`search/host.rs`):
    // the hypotheses must not depend on the thread count. 9 sentences × beam 5 rows make 3
    // shares on 3 threads.
    let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let m = model(arch, 11);
        let s = Searcher::new(vec![&m]).unwrap();
        for int8 in [false, true] {
            let one = pool(1).install(|| search(&s, 5, false, int8, Impl::Fused));
            let three = pool(3).install(|| search(&s, 5, false, int8, Impl::Fused));
            assert_same(&one, &three, &format!("{arch:?}, int8 {int8}, 1 against 3 threads"));
        }
    }
}

/// Issue 56: the int8 products run on the caller's rayon pool, and with more threads than
/// cores a thread waiting inside one steals another vocabulary block's job; a thread-local
/// buffer held across the product panicked ("already borrowed") with 16 threads. A 1 600-word
/// vocabulary is four 512-row chunks, searched in parallel blocks: 16 and 64 threads on any
/// machine must find what 2 find, in f32 and int8.
#[test]
fn sixteen_and_sixty_four_threads_search_as_two() {
    let mut cfg = common::small_config(ArchName::Rnnsearch, 1600, 16, 32);
    cfg.init_std = 0.3;
    let m = Seq2Seq::fresh(&cfg, 4, DType::F32, &Device::Cpu).unwrap();
    let s = Searcher::new(vec![&m]).unwrap();
    let srcs: Vec<Vec<u32>> = common::reversal_examples(24, 1500, 3..=12, 9).into_iter().map(|e| e.src).collect();
    let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
    for int8 in [false, true] {
        let cfg = SearchConfig { beam_size: 5, n_best: 2, max_len_ratio: 1.0, int8, ..SearchConfig::default() };
        let o = SearchOptions { cfg, alignments: false, imp: Impl::Fused };
        let go = |n| pool(n).install(|| s.search(&srcs, None, &o).unwrap());
        let two = go(2);
        for n in [16, 64] {
            assert_same(&two, &go(n), &format!("int8 {int8}, 2 against {n} threads"));
        }
    }
}
