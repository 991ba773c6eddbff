//! `nmt translate -m MODEL`: stdin → stdout, one sentence a line (Marian/Nematus style).
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use nmt::config::{Impl, SearchRequest};
use nmt::search::SearchOptions;
use nmt::translate::Translation;
use nmt::unk::UnkReplacer;

use super::common::{load_models, read_input_lines, ComputeArgs};
use super::io::Output;

#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// Model file (`model.safetensors` from `nmt train`); repeat for an ensemble, which
    /// decodes with the average of the models' distributions (they must share their
    /// vocabularies; the first model's search defaults apply).
    #[arg(short, long, required = true)]
    pub model: Vec<PathBuf>,
    /// Input file (default: stdin).
    #[arg(short, long)]
    pub input: Option<PathBuf>,
    /// Output file (default: stdout). A regular file is written atomically (a failed run leaves
    /// no partial file); a FIFO or device is written in place; a symbolic link is followed. An
    /// output that is an input, or the --alignments file, is refused.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Beam size; 1 = greedy search. At most 128 (`nmt::config::MAX_BEAM`).
    #[arg(short = 'b', long)]
    pub beam_size: Option<usize>,
    /// Print the K best hypotheses per sentence in Moses n-best format
    /// (`id ||| hypothesis ||| logprob= L ||| score`). At most 128, as the beam.
    #[arg(long, value_name = "K")]
    pub n_best: Option<usize>,
    /// Length normalisation exponent α: rank by log p / len^α (0 = off, 1 = Cho et al.).
    #[arg(long, value_name = "ALPHA")]
    pub normalize: Option<f64>,
    /// Never produce the unknown-word token.
    #[arg(long)]
    pub no_unk: bool,
    /// Output at most RATIO × source length + 10 tokens.
    #[arg(long, value_name = "RATIO")]
    pub max_len_ratio: Option<f64>,
    /// Sentences per batch.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Crop sources longer than N tokens to their first N, with a warning (default 1000).
    #[arg(long, value_name = "N")]
    pub max_length: Option<usize>,
    /// Write the attention matrix of each best hypothesis as JSON lines (for `nmt plot attention`).
    #[arg(long, value_name = "FILE")]
    pub alignments: Option<PathBuf>,
    /// Replace each `<unk>` of the output with the source word it attended to most (attention
    /// models only; Luong et al. 2015).
    #[arg(long)]
    pub replace_unk: bool,
    /// With --replace-unk: translate the attended word through this dictionary
    /// (`source target [probability]` per line; words not in it are copied).
    #[arg(long, value_name = "FILE", requires = "replace_unk")]
    pub dict: Option<PathBuf>,
    /// Score only the model file's lexical shortlist (`nmt shortlist`): each batch's source
    /// tokens' translations and the most frequent target tokens (Marian's `--shortlist`).
    #[arg(long)]
    pub shortlist: bool,
    /// Multiply in int8 (the fused CPU search): weights quantised per output row, activations
    /// per row on the fly (Marian's `--gemm-type packed8`).
    #[arg(long)]
    pub int8: bool,
    /// Search implementation: `fused` (host kernels; used when the model is f32 on the CPU,
    /// otherwise falls back to `composed`) or `composed` (candle ops, the reference; `ops` before).
    #[arg(long = "impl", value_name = "fused|composed", default_value = "fused")]
    pub imp: Impl,
    /// Print speed to stderr when done: sentences, target subword tokens (the best
    /// hypotheses', without `</s>`), wall time of the search, sentences/s, tokens/s, and the
    /// decoder's work in hypothesis rows × steps.
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

impl TranslateArgs {
    /// The flags' changes to the model's search defaults.
    fn search_request(&self) -> SearchRequest {
        SearchRequest {
            beam_size: self.beam_size,
            n_best: self.n_best,
            normalize: self.normalize,
            max_len_ratio: self.max_len_ratio,
            batch_size: self.batch_size,
            max_source_len: self.max_length,
            no_unk: self.no_unk,
            shortlist: self.shortlist.then_some(true),
            int8: self.int8.then_some(true),
        }
    }
}

pub fn run(args: TranslateArgs) -> Result<()> {
    let mut inputs: Vec<Option<&std::path::Path>> = args.model.iter().map(|m| Some(m.as_path())).collect();
    inputs.extend([args.input.as_deref(), args.dict.as_deref()]);
    super::io::check_distinct(&inputs, &[args.output.as_deref(), args.alignments.as_deref()])?;
    let device = args.compute.setup()?;
    let translator = load_models(&args.model, &device)?;
    let search = args.search_request().apply(translator.default_search())?;
    let lines = read_input_lines(args.input.as_deref())?;
    let unk = match (args.replace_unk, &args.dict) {
        (false, _) => None,
        (true, _) if !translator.models().iter().any(|m| m.has_attention()) => {
            bail!("--replace-unk needs an attention model; this one is {}", translator.model().cfg.arch.name().name())
        }
        (true, None) => Some(UnkReplacer::new()),
        (true, Some(path)) => Some(UnkReplacer::with_dictionary(path)?),
    };
    let opts = SearchOptions { cfg: search, alignments: args.alignments.is_some() || unk.is_some(), imp: args.imp };
    let t0 = std::time::Instant::now();
    nmt::search::take_row_steps();
    let mut out = translator.translate(&lines, &opts)?;
    if let Some(unk) = &unk {
        unk.apply(&lines, &mut out, &translator.meta.src, &translator.meta.tgt)?;
    }
    if args.stats {
        let secs = t0.elapsed().as_secs_f64();
        let tokens: usize = out.iter().filter_map(|t| t.hyps.first()).map(|h| h.hyp.tokens.len()).sum();
        let row_steps = nmt::search::take_row_steps();
        eprintln!(
            "translated {} sentences, {tokens} target tokens in {secs:.2} s: {:.1} sentences/s, {:.0} tokens/s; \
             decoder row-steps: {row_steps} ({:.0}/s)",
            out.len(),
            out.len() as f64 / secs,
            tokens as f64 / secs,
            row_steps as f64 / secs
        );
    }
    if nmt::profile::enabled() {
        // NMT_PROFILE=1: where the fused search's time went (docs/PERF.md, "Reproduce").
        for (name, ms) in nmt::profile::take().into_iter().filter(|(n, ms)| n.starts_with("search.") && *ms > 0.0) {
            eprintln!("profile {name}: {ms:.1} ms");
        }
    }
    let mut w = Output::create(args.output.as_deref())?;
    write_translations(&mut w, &out, args.n_best.is_some())?;
    w.commit()?;
    if let Some(path) = &args.alignments {
        write_alignments(path, &out)?;
    }
    Ok(())
}

/// Plain output (best hypothesis per line) or Moses n-best lines.
pub fn write_translations(w: &mut dyn Write, out: &[Translation], n_best: bool) -> Result<()> {
    for (id, t) in out.iter().enumerate() {
        if n_best {
            for h in &t.hyps {
                writeln!(w, "{id} ||| {} ||| logprob= {:.6} ||| {:.6}", h.text, h.hyp.log_prob, h.hyp.score)?;
            }
        } else {
            writeln!(w, "{}", t.hyps.first().map_or("", |h| h.text.as_str()))?;
        }
    }
    Ok(())
}

/// JSON lines `{"src": [...], "tgt": [...], "weights": [[...]]}`, one per input sentence.
fn write_alignments(path: &std::path::Path, out: &[Translation]) -> Result<()> {
    let mut f = Output::create(Some(path))?;
    for t in out {
        let best = t.hyps.first();
        let record = serde_json::json!({
            "src": t.src_pieces,
            "tgt": best.map(|h| h.pieces.clone()).unwrap_or_default(),
            "weights": best.and_then(|h| h.hyp.alignment.clone()).unwrap_or_default(),
        });
        writeln!(f, "{record}")?;
    }
    f.commit()
}
