//! Every shipped config in `configs/` parses, validates, and names existing data files; the
//! small recipes regularise, the paper-faithful ones do not.
use std::path::Path;

use nmt::config::{Config, Optimizer};

fn load(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs").join(name);
    let cfg = Config::from_file(&path, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    for p in [&cfg.data.train_src, &cfg.data.train_tgt, &cfg.data.dev_src, &cfg.data.dev_tgt] {
        assert!(p.exists(), "{name}: {} does not exist", p.display());
    }
    cfg
}

#[test]
fn shipped_configs_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            load(&name);
            n += 1;
        }
    }
    assert!(n >= 4, "expected the small and the paper configs, found {n}");
    for small in ["rnnsearch-small.toml", "rnnenc-small.toml", "lstm-seq2seq-small.toml", "grconv-small.toml"] {
        let c = load(small);
        assert!(c.model.dropout > 0.0 && c.train.label_smoothing > 0.0 && c.train.lr_decay < 1.0, "{small}: the recipe is off");
    }
    for paper in ["rnnsearch-paper.toml", "rnnenc-paper.toml", "grconv-paper.toml"] {
        let c = load(paper);
        assert_eq!(c.train.optimizer, Optimizer::Adadelta, "{paper}");
        assert_eq!((c.model.dropout, c.train.label_smoothing, c.model.tie_target_embeddings), (0.0, 0.0, false), "{paper}");
    }
    for grconv in ["grconv-small.toml", "grconv-paper.toml"] {
        assert_eq!(load(grconv).model.arch, nmt::config::Arch::Rnnenc { encoder: nmt::config::EncoderKind::Grconv }, "{grconv}");
    }
    // Sutskever et al.'s seq2seq: stacked LSTMs reading the source backwards.
    for seq2seq in ["lstm-seq2seq-small.toml", "lstm-seq2seq-paper.toml"] {
        let m = load(seq2seq).model;
        assert!(m.cell == nmt::config::Cell::Lstm && m.reverse_source && m.enc_layers >= 2 && m.dec_layers >= 2, "{seq2seq}");
    }
}

/// A `[model]` key at its default is not written, so builds from before the key read the model
/// file (they refuse unknown keys); `changed`, a model with another value, writes `written` and
/// reads back equal.
fn default_is_not_written(key: &str, changed: &dyn Fn(nmt::config::ModelConfig) -> nmt::config::ModelConfig, written: &str) {
    use nmt::config::ModelConfig;
    let plain = load("rnnsearch-small.toml").model;
    let text = toml::to_string(&plain).unwrap();
    assert!(!text.contains(key), "{key} was written at its default:\n{text}");
    let other = changed(plain);
    let text = toml::to_string(&other).unwrap();
    assert!(text.contains(written), "{text}");
    assert_eq!(toml::from_str::<ModelConfig>(&text).unwrap(), other);
}

#[test]
fn a_plain_stack_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, StackKind};
    default_is_not_written("stack", &|m| ModelConfig { dec_layers: 2, stack: StackKind::GatedFeedback, ..m }, "stack = \"gated-feedback\"");
}

#[test]
fn the_papers_initialisation_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, WeightInit};
    default_is_not_written("init =", &|m| ModelConfig { init: WeightInit::Glorot, ..m }, "init = \"glorot\"");
}

#[test]
fn the_maxout_output_layer_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, OutputLayer};
    default_is_not_written("output_layer", &|m| ModelConfig { output_layer: OutputLayer::Tanh, ..m }, "output_layer = \"tanh\"");
}
