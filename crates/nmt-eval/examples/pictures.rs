//! Writes example pictures (attention heatmap, training curves, BLEU by length) as
//! PNG and SVG into a directory (default `/tmp/nmt-eval-pics`), from synthetic data.
//!
//! `cargo run -p nmt-eval --example pictures [-- DIR]`
use std::path::PathBuf;

use nmt_eval::by_length::{bleu_by_length, LengthBuckets};
use nmt_eval::plot::{plot_attention, plot_by_length, plot_curves, Attention, TrainingLog};
use nmt_eval::BleuOptions;

/// Deterministic corruption that grows with sentence length (a fake system).
fn degrade(line: &str, every: usize, seed: usize) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = words.len();
    words
        .iter()
        .enumerate()
        .filter(|(i, _)| !(i * 7 + seed + n).is_multiple_of(every.saturating_sub(n / 15).max(2)))
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<(), nmt_eval::Error> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp/nmt-eval-pics".into()));
    std::fs::create_dir_all(&dir).map_err(|error| nmt_eval::Error::Io { path: dir.clone(), error })?;

    let src: Vec<String> =
        "The agreement on the European Economic Area was signed in August 1992 . <eos>".split(' ').map(String::from).collect();
    let tgt: Vec<String> =
        "L' accord sur la zone économique européenne a été signé en août 1992 . <eos>".split(' ').map(String::from).collect();
    // Mostly monotone, with the adjective-noun inversion of "zone économique européenne".
    let align = [0, 1, 2, 3, 6, 5, 4, 7, 7, 8, 9, 10, 11, 12, 13];
    let weights = (0..tgt.len())
        .map(|i| {
            (0..src.len())
                .map(|j| {
                    let d = (j as f32 - align[i] as f32).abs();
                    (0.85 * (-d * d).exp() + if d == 1.0 { 0.08 } else { 0.0 }).min(1.0)
                })
                .collect()
        })
        .collect();
    let att = Attention { src, tgt, weights };
    for ext in ["png", "svg"] {
        plot_attention(&att, dir.join(format!("attention.{ext}")))?;
    }

    let mut log = TrainingLog::default();
    for step in (0..=20_000).step_by(100) {
        let s = step as f64;
        log.loss.push((s, 2.0 + 6.0 * (-s / 4000.0).exp() + 0.15 * ((s / 300.0).sin())));
        if step % 2000 == 0 && step > 0 {
            log.dev_bleu.push((s, 25.0 * (1.0 - (-s / 6000.0).exp())));
            log.dev_ppl.push((s, 8.0 + 60.0 * (-s / 3000.0).exp()));
        }
    }
    for ext in ["png", "svg"] {
        plot_curves(&log, dir.join(format!("curves.{ext}")))?;
    }

    // Sources with lengths 3..80 words; references; two systems that degrade with length.
    let mut sources = Vec::new();
    let mut refs = Vec::new();
    for k in 0..400usize {
        let len = 3 + (k * 37) % 78;
        sources.push((0..len).map(|i| format!("s{}", (i * 13 + k) % 50)).collect::<Vec<_>>().join(" "));
        refs.push((0..len).map(|i| format!("w{}", (i * 7 + k) % 90)).collect::<Vec<_>>().join(" "));
    }
    let sys_a: Vec<String> = refs.iter().map(|r| degrade(r, 9, 1)).collect();
    let sys_b: Vec<String> = refs.iter().map(|r| degrade(r, 5, 3)).collect();
    let systems = vec![("RNNsearch-50".to_string(), sys_a), ("RNNenc-50".to_string(), sys_b)];
    let r = bleu_by_length(&sources, &[refs], &systems, &BleuOptions::default(), LengthBuckets::default())?;
    print!("{}", r.format_table());
    for ext in ["png", "svg"] {
        plot_by_length(&r, dir.join(format!("by_length.{ext}")))?;
    }
    println!("wrote {}/{{attention,curves,by_length}}.{{png,svg}}", dir.display());
    Ok(())
}
