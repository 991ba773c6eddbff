//! `nmt embed -m MODEL`: each input line's phrase representation (`nmt::embed`), as TSV (one
//! line of tab-separated numbers per input line, the TensorFlow projector's layout) or `.npy`
//! (`(lines, dim)` float32), and with `--plot` a labelled PCA map (Cho et al. 2014, Figure 4).
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use nmt::embed::embed_lines;
use nmt::eval::plot::plot_embedding;
use nmt::translate::Translator;

use super::common::{read_input_lines, ComputeArgs};
use super::io::Output;

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Model file (`model.safetensors` from `nmt train`).
    #[arg(short, long)]
    pub model: PathBuf,
    /// Phrases or sentences, one a line (default: stdin).
    #[arg(short, long)]
    pub input: Option<PathBuf>,
    /// Output: `.npy` for a NumPy array, anything else TSV (default: stdout, TSV). Written
    /// atomically.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also draw the lines' 2-D PCA map, labelled with the lines (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Lines per batch.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

pub fn run(a: EmbedArgs) -> Result<()> {
    super::io::check_distinct(&[Some(&a.model), a.input.as_deref()], &[a.output.as_deref(), a.plot.as_deref()])?;
    let device = a.compute.setup()?;
    let translator = Translator::load(&a.model, &device)?;
    let lines = read_input_lines(a.input.as_deref())?;
    if lines.is_empty() {
        bail!("no input lines to embed");
    }
    let (kind, vectors) = embed_lines(translator.model(), &translator.meta, &lines, a.batch_size)?;
    let dim = vectors.first().map_or(0, |v| v.len());
    eprintln!("{} vectors of {dim}: {}", vectors.len(), kind.describe());
    let mut out = Output::create(a.output.as_deref())?;
    if a.output.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e == "npy")) {
        write_npy(&mut out, &vectors, dim)?;
    } else {
        for v in &vectors {
            writeln!(out, "{}", v.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join("\t"))?;
        }
    }
    out.commit()?;
    if let Some(p) = &a.plot {
        plot_embedding(&vectors, &lines, &format!("{} phrases", lines.len()), p)?;
    }
    Ok(())
}

/// NumPy's `.npy` format (`npyz`): a `(rows, dim)` little-endian float32 array in C order.
fn write_npy(w: &mut dyn Write, rows: &[Vec<f32>], dim: usize) -> Result<()> {
    use npyz::WriterBuilder;
    let mut npy = npyz::WriteOptions::new().default_dtype().shape(&[rows.len() as u64, dim as u64]).writer(w).begin_nd()?;
    npy.extend(rows.iter().flatten().copied())?;
    npy.finish()?;
    Ok(())
}
