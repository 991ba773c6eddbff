//! Shared pieces of the integration tests: the toy reversal task and small configs.
#![allow(dead_code)]
pub mod ranks;
pub mod twins;
pub mod weights;
use candle_core::{DType, Tensor};
use nmt::config::{Arch, ArchName, EncoderKind, ModelConfig};
use nmt::data::batch::{Batch, Example};
use nmt::data::EOS;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// First word id of the toy vocabulary (ids 0..4 are the special symbols).
pub const FIRST: u32 = 4;

/// `n` random sequences over `words` symbols with lengths in `lens`, targets reversed.
pub fn reversal_examples(n: usize, words: u32, lens: std::ops::RangeInclusive<usize>, seed: u64) -> Vec<Example> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = rng.gen_range(lens.clone());
            let mut src: Vec<u32> = (0..len).map(|_| FIRST + rng.gen_range(0..words)).collect();
            let mut tgt: Vec<u32> = src.iter().rev().copied().collect();
            src.push(EOS);
            tgt.push(EOS);
            Example { src, tgt }
        })
        .collect()
}

/// A batch of `n` pairs of random ids below `vocab`, each side's length drawn from `lens` (then
/// `</s>`): data for comparing two forms of one model's loss.
pub fn random_batch(n: usize, vocab: u32, lens: std::ops::Range<usize>, seed: u64) -> Batch {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let examples: Vec<Example> = (0..n)
        .map(|_| {
            let (ls, lt) = (rng.gen_range(lens.clone()), rng.gen_range(lens.clone()));
            let mut src: Vec<u32> = (0..ls).map(|_| rng.gen_range(FIRST..vocab)).collect();
            let mut tgt: Vec<u32> = (0..lt).map(|_| rng.gen_range(FIRST..vocab)).collect();
            src.push(EOS);
            tgt.push(EOS);
            Example { src, tgt }
        })
        .collect();
    let rows: Vec<&Example> = examples.iter().collect();
    Batch::from_examples(&rows, (0..rows.len()).collect())
}

/// A small model for the toy tasks and gradient checks.
pub fn small_config(arch: ArchName, vocab: usize, emb: usize, hidden: usize) -> ModelConfig {
    let mut c = ModelConfig::preset(match arch {
        ArchName::Rnnsearch => "tiny",
        ArchName::Rnnenc => "tiny-rnnenc",
    })
    .unwrap();
    c.src_vocab = vocab;
    c.tgt_vocab = vocab;
    c.emb_dim = emb;
    c.hidden_dim = hidden;
    set_att_dim(&mut c, hidden);
    c.maxout_dim = hidden;
    c
}

/// An RNNsearch config's alignment size `n'` (RNNenc has none: left as it is).
pub fn set_att_dim(c: &mut ModelConfig, size: usize) {
    if let Arch::Rnnsearch { att_dim, .. } = &mut c.arch {
        *att_dim = size;
    }
}

/// An RNNsearch config with the conditional GRU decoder (`model.decoder = "conditional"`).
#[allow(dead_code)]
pub fn with_conditional(c: &mut ModelConfig) {
    if let Arch::Rnnsearch { decoder, .. } = &mut c.arch {
        *decoder = nmt::config::DecoderKind::Conditional;
    } else {
        panic!("the conditional decoder needs RNNsearch, the test asked it of {:?}", c.arch);
    }
}

/// An RNNsearch config whose decoder starts from `kind` (`model.decoder_start`).
#[allow(dead_code)]
pub fn with_start(c: &mut ModelConfig, kind: nmt::config::StartState) {
    if let Arch::Rnnsearch { start, .. } = &mut c.arch {
        *start = kind;
    } else {
        panic!("model.decoder_start is RNNsearch's, the test asked it of {:?}", c.arch);
    }
}

/// An RNNsearch config with the copy mixture.
pub fn with_copy(c: &mut ModelConfig) {
    if let Arch::Rnnsearch { copy, .. } = &mut c.arch {
        *copy = true;
    } else {
        panic!("the copy mixture needs RNNsearch, the test asked it of {:?}", c.arch);
    }
}

/// An RNNenc config over grConv.
pub fn with_grconv(c: &mut ModelConfig) {
    c.arch = Arch::Rnnenc { encoder: EncoderKind::Grconv };
}

/// A tiny model's metadata (word vocabularies of 10 words) and its config, for file tests.
pub fn tiny_meta(arch: ArchName) -> (nmt::model_file::ModelMeta, ModelConfig) {
    use nmt::data::subword::{Segmenter, SubwordConfig, SubwordKind};
    let lines: Vec<String> = vec!["a b c d e f g h i j".to_string()];
    let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None };
    let seg = Segmenter::train(&lines, &sub).unwrap();
    let cfg = small_config(arch, seg.vocab_size(), 6, 5);
    let meta = nmt::model_file::ModelMeta {
        config: cfg.clone(),
        search: nmt::config::SearchConfig::default(),
        src: seg.clone(),
        tgt: seg,
        step: 0,
        languages: None,
        shortlist: None,
        converted_from: None,
    };
    (meta, cfg)
}

/// Max |a − b| / max(1, |b|) over all entries: the tests' measure of how far a fused kernel,
/// or another device, is from its reference.
pub fn max_rel(a: &Tensor, b: &Tensor) -> f64 {
    let a = a.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
    let b = b.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
    assert_eq!(a.len(), b.len());
    a.iter().zip(&b).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0.0, f64::max)
}

/// The repository's root, where `configs/` and `data/` are: `NMT_REPO_ROOT` when set, else the
/// first of the working directory and its parents that holds both. Not the build machine's
/// path (`CARGO_MANIFEST_DIR` is fixed at compile time): `scripts/gpu-check.sh` runs the GPU
/// test's binary on another machine, from the pack, which has `configs/` and `data/` of its own.
pub fn repo_root() -> std::path::PathBuf {
    let holds_both = |d: &std::path::Path| d.join("configs").is_dir() && d.join("data").is_dir();
    if let Some(root) = std::env::var_os("NMT_REPO_ROOT") {
        let root = std::path::PathBuf::from(root);
        assert!(holds_both(&root), "NMT_REPO_ROOT={}: no configs/ and data/ there", root.display());
        return root;
    }
    let cwd = std::env::current_dir().expect("the working directory");
    match cwd.ancestors().find(|d| holds_both(d)) {
        Some(root) => root.to_path_buf(),
        None => panic!(
            "no configs/ and data/ in {} or above it: run the test inside the repository (or the GPU pack), or set NMT_REPO_ROOT",
            cwd.display()
        ),
    }
}

/// Every shipped config (`configs/*.toml`), its model shrunk to test size (vocabularies of
/// `vocab`, every width 8, attention 6) with everything else as shipped: layers, cells,
/// decoder, layer normalisation, dropout, the recipe's training options. Sorted by name.
pub fn shipped_configs(vocab: usize) -> Vec<(String, nmt::config::Config)> {
    let dir = repo_root().join("configs");
    let mut out: Vec<(String, nmt::config::Config)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let mut c = nmt::config::Config::from_file(&p, &[]).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let m = &mut c.model;
            (m.src_vocab, m.tgt_vocab) = (vocab, vocab);
            (m.emb_dim, m.hidden_dim, m.maxout_dim) = (8, 8, 8);
            set_att_dim(m, 6);
            (p.file_stem().unwrap().to_string_lossy().into_owned(), c)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `configs` (from [`shipped_configs`]) and variants no shipped recipe has, whose layers have
/// GPU forms of their own (`kernels/gpu/`): RNNsearch with LSTMs (the bidirectional encoder
/// and Bahdanau's decoder loop, `lstm.rs`), `rnnsearch-small` with `model.cell = "lstm"`;
/// Marian's layer-normalised `s2s` (the conditional GRU's loop, `norm.rs`), `rnnsearch-s2s`
/// with `model.layer_norm = true` (and the reset-after GRU it needs); and gated-feedback
/// stacks (`feedback.rs`), the decoder's (`rnnsearch-small`) and RNNenc's encoder's
/// (`rnnenc-small`), three layers each.
pub fn with_gpu_variants(mut configs: Vec<(String, nmt::config::Config)>) -> Vec<(String, nmt::config::Config)> {
    let find = |name: &str| configs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("configs/{name}.toml")).1.clone();
    let (mut lstm, mut normed) = (find("rnnsearch-small"), find("rnnsearch-s2s"));
    let (mut fb_dec, mut fb_enc) = (find("rnnsearch-small"), find("rnnenc-small"));
    lstm.model.cell = nmt::config::Cell::Lstm;
    normed.model.layer_norm = true;
    normed.model.gru = nmt::config::GruForm::ResetAfter;
    (fb_dec.model.dec_layers, fb_dec.model.stack) = (3, nmt::config::StackKind::GatedFeedback);
    (fb_enc.model.enc_layers, fb_enc.model.dec_layers, fb_enc.model.stack) = (3, 3, nmt::config::StackKind::GatedFeedback);
    configs.push(("rnnsearch-small with model.cell = lstm".into(), lstm));
    configs.push(("rnnsearch-s2s with model.layer_norm = true, gru = reset-after".into(), normed));
    configs.push(("rnnsearch-small with dec_layers = 3, stack = gated-feedback".into(), fb_dec));
    configs.push(("rnnenc-small with enc_layers = dec_layers = 3, stack = gated-feedback".into(), fb_enc));
    configs
}
