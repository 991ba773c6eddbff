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

#[test]
fn a_plain_stack_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, StackKind};
    let plain = load("rnnsearch-small.toml").model;
    let text = toml::to_string(&plain).unwrap();
    assert!(!text.contains("stack"), "a plain stack was written:\n{text}");
    assert_eq!(toml::from_str::<ModelConfig>(&text).unwrap(), plain);
    let fed = ModelConfig { dec_layers: 2, stack: StackKind::GatedFeedback, ..plain };
    let text = toml::to_string(&fed).unwrap();
    assert!(text.contains("stack = \"gated-feedback\""), "{text}");
    assert_eq!(toml::from_str::<ModelConfig>(&text).unwrap(), fed);
}

#[test]
fn the_papers_initialisation_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, WeightInit};
    let paper = load("rnnsearch-small.toml").model;
    let text = toml::to_string(&paper).unwrap();
    assert!(!text.contains("init ="), "the papers' initialisation was written:\n{text}");
    let glorot = ModelConfig { init: WeightInit::Glorot, ..paper };
    let text = toml::to_string(&glorot).unwrap();
    assert!(text.contains("init = \"glorot\""), "{text}");
    assert_eq!(toml::from_str::<ModelConfig>(&text).unwrap(), glorot);
}

#[test]
fn the_maxout_output_layer_is_not_written_so_older_builds_read_the_model() {
    use nmt::config::{ModelConfig, OutputLayer};
    let maxout = load("rnnsearch-small.toml").model;
    let text = toml::to_string(&maxout).unwrap();
    assert!(!text.contains("output_layer"), "the papers' maxout was written:\n{text}");
    let tanh = ModelConfig { output_layer: OutputLayer::Tanh, ..maxout };
    let text = toml::to_string(&tanh).unwrap();
    assert!(text.contains("output_layer = \"tanh\""), "{text}");
    assert_eq!(toml::from_str::<ModelConfig>(&text).unwrap(), tanh);
}
