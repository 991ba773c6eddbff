//! Scores `SRC TGT` files with a model loaded in f64 (reference precision for comparisons).
use nmt::candle_core::{DType, Device};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let loaded = nmt::model_file::load(std::path::Path::new(&a[1]), DType::F64, &Device::Cpu).unwrap();
    let src = std::fs::read_to_string(&a[2]).unwrap();
    let tgt = std::fs::read_to_string(&a[3]).unwrap();
    let pairs: Vec<(String, String)> = src.lines().zip(tgt.lines()).map(|(s, t)| (s.to_owned(), t.to_owned())).collect();
    for s in nmt::score::score_pairs(&[&loaded.model], &loaded.meta, &pairs, 16).unwrap() {
        println!("{:.6}", s.log_prob);
    }
}
