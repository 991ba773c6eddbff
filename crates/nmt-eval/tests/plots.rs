//! Pictures are written in both formats, inputs are validated, errors name files.
use nmt_eval::by_length::{bleu_by_length, LengthBuckets};
use nmt_eval::plot::{plot_attention, plot_by_length, plot_curves, read_attention, read_training_log};
use nmt_eval::{BleuOptions, Error};

fn is_png(p: &std::path::Path) -> bool {
    std::fs::read(p).map(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000).unwrap_or(false)
}

fn is_svg_with_text(p: &std::path::Path, text: &str) -> bool {
    std::fs::read_to_string(p).map(|s| s.contains("<svg") && s.contains(text)).unwrap_or(false)
}

#[test]
fn attention_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("att.jsonl");
    std::fs::write(
        &input,
        "{\"src\": [\"a\", \"b\"], \"tgt\": [\"x\"], \"weights\": [[0.25, 0.75]]}\n\n\
         {\"src\": [\"le\", \"chat\", \"<eos>\"], \"tgt\": [\"the\", \"cat\"], \"weights\": [[0.9, 0.1, 0.0], [0.1, 0.8, 0.1]]}\n\
         {\"src\": [\"a\"], \"tgt\": [\"x\"], \"weights\": [[0.5, 0.5]]}\n",
    )
    .unwrap();
    let att = read_attention(&input, 1).unwrap();
    assert_eq!(att.tgt, ["the", "cat"]);
    let png = dir.path().join("a.png");
    let svg = dir.path().join("a.svg");
    plot_attention(&att, &png).unwrap();
    plot_attention(&att, &svg).unwrap();
    assert!(is_png(&png));
    assert!(is_svg_with_text(&svg, "chat"));

    // Wrong shape: error names file and line (line 4: the blank line counts as a line).
    let e = read_attention(&input, 2).unwrap_err();
    assert!(matches!(e, Error::Parse { line: 4, .. }), "{e}");
    assert!(e.to_string().contains("att.jsonl:4:"), "{e}");
    assert!(read_attention(&input, 3).is_err());
    assert!(plot_attention(&att, dir.path().join("a.jpg")).is_err());
    assert!(plot_attention(&att, dir.path().join("missing/a.png")).is_err());
}

#[test]
fn curves_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.jsonl");
    let mut text = String::new();
    for s in 1..=50 {
        text.push_str(&format!("{{\"step\": {}, \"loss\": {}}}\n", s * 10, 5.0 / f64::from(s)));
        if s % 10 == 0 {
            text.push_str(&format!("{{\"step\": {}, \"dev_bleu\": {}}}\n", s * 10, f64::from(s) / 2.0));
        }
    }
    std::fs::write(&log, text).unwrap();
    let l = read_training_log(&log).unwrap();
    assert_eq!((l.loss.len(), l.dev_bleu.len(), l.dev_ppl.len()), (50, 5, 0));
    plot_curves(&l, dir.path().join("c.png")).unwrap();
    plot_curves(&l, dir.path().join("c.svg")).unwrap();
    assert!(is_png(&dir.path().join("c.png")));
    assert!(is_svg_with_text(&dir.path().join("c.svg"), "Validation BLEU"));

    std::fs::write(&log, "{\"step\": 1, \"loss\": 2}\nnot json\n").unwrap();
    let e = read_training_log(&log).unwrap_err();
    assert!(e.to_string().contains("train.jsonl:2:"), "{e}");
    std::fs::write(&log, "{\"loss\": 2}\n").unwrap();
    assert!(read_training_log(&log).is_err());
}

#[test]
fn by_length_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let src: Vec<String> = (1..40).map(|n| vec!["w"; n * 2].join(" ")).collect();
    let refs: Vec<String> = (1..40).map(|n| (0..n + 4).map(|i| format!("t{i}")).collect::<Vec<_>>().join(" ")).collect();
    let hyp: Vec<String> = refs.iter().map(|r| r.replacen("t1 ", "x ", 1)).collect();
    let systems = vec![("sys".to_string(), hyp), ("copy".to_string(), refs.clone())];
    let r = bleu_by_length(&src, &[refs], &systems, &BleuOptions::default(), LengthBuckets::default()).unwrap();
    plot_by_length(&r, dir.path().join("b.png")).unwrap();
    plot_by_length(&r, dir.path().join("b.svg")).unwrap();
    assert!(is_png(&dir.path().join("b.png")));
    assert!(is_svg_with_text(&dir.path().join("b.svg"), "60+"));
}
