//! `embed_lines`: one vector per line whatever the batch (padding never leaks in: the forward
//! state is read at each sentence's own last token), of the documented width per architecture.
mod common;

use candle_core::{DType, Device};
use nmt::config::ArchName;
use nmt::embed::{embed_lines, Representation};
use nmt::model::Seq2Seq;

#[test]
fn vectors_ignore_batching_and_have_the_documented_width() {
    let lines: Vec<String> = ["a b c", "d", "e f g h i j", "", "j a"].iter().map(|s| s.to_string()).collect();
    for (arch, kind) in [(ArchName::Rnnsearch, Representation::FinalStates), (ArchName::Rnnenc, Representation::Summary)] {
        let (meta, mut cfg) = common::tiny_meta(arch);
        cfg.init_std = 0.5;
        let model = Seq2Seq::fresh(&cfg, 2, DType::F32, &Device::Cpu).unwrap();
        let (k, all) = embed_lines(&model, &meta, &lines, 64).unwrap();
        assert_eq!(k, kind);
        let width = if kind == Representation::FinalStates { 2 * cfg.hidden_dim } else { cfg.hidden_dim };
        assert!(all.iter().all(|v| v.len() == width), "{arch:?}");
        for (i, line) in lines.iter().enumerate() {
            let (_, one) = embed_lines(&model, &meta, std::slice::from_ref(line), 1).unwrap();
            let diff = one[0].iter().zip(&all[i]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(diff < 1e-5, "{arch:?} line {i}: {diff}");
        }
        // Different sentences, different vectors.
        assert!(all[0].iter().zip(&all[2]).any(|(a, b)| (a - b).abs() > 1e-3));
    }
}
