//! `nmt eval …`: BLEU, chrF, BLEU by sentence length (logic lives in `nmt::eval`).
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use nmt::eval::by_length::{bleu_by_length, LengthBuckets};
use nmt::eval::io::{check_same_length, read_lines, read_lines_from, read_vocab};
use nmt::eval::no_unk::{known_mask, no_unk_report, vocab_predicate};
use nmt::eval::{corpus_bleu, corpus_chrf, sentence_bleus, sentence_chrf, BleuOptions, ChrfOptions, Tokenize};

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: EvalCommand,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Corpus BLEU, identical to sacreBLEU.
    Bleu(BleuArgs),
    /// chrF2, identical to sacreBLEU.
    Chrf(ChrfArgs),
    /// BLEU per source-length bucket for several systems (and All / No-UNK).
    ByLength(ByLengthArgs),
}

/// Hypotheses and references shared by `bleu` and `chrf`.
#[derive(Debug, Args)]
pub struct RefHypArgs {
    /// Reference file; repeat for several references.
    #[arg(short = 'r', long = "ref", required = true)]
    pub refs: Vec<PathBuf>,
    /// Hypothesis file (default: standard input).
    pub hyp: Option<PathBuf>,
    /// Lowercase before scoring.
    #[arg(long, short = 'l')]
    pub lowercase: bool,
    /// One score per sentence.
    #[arg(long)]
    pub sentence: bool,
    /// sacreBLEU's JSON output (JSON lines with --sentence).
    #[arg(long)]
    pub json: bool,
    /// Decimals of the score.
    #[arg(long, default_value_t = 2)]
    pub width: usize,
    /// Score only the No-UNK subset: the source file, with `--no-unk-vocab` given twice.
    #[arg(long, requires = "no_unk_vocab")]
    pub src: Option<PathBuf>,
    /// Source then target vocabulary file (with `--src`): only sentences whose source words
    /// and reference words all appear in them are scored, as in `by-length`'s No-UNK table.
    #[arg(long = "no-unk-vocab", num_args = 1, value_names = ["VOCAB"], requires = "src")]
    pub no_unk_vocab: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BleuArgs {
    #[command(flatten)]
    pub io: RefHypArgs,
    /// Tokenizer: none, 13a or intl.
    #[arg(long, short = 't', default_value = "13a")]
    pub tokenize: String,
}

#[derive(Debug, Args)]
pub struct ChrfArgs {
    #[command(flatten)]
    pub io: RefHypArgs,
}

#[derive(Debug, Args)]
pub struct ByLengthArgs {
    /// Source file (its whitespace word counts define the buckets).
    #[arg(long)]
    pub src: PathBuf,
    /// Reference file; repeat for several references.
    #[arg(short = 'r', long = "ref", required = true)]
    pub refs: Vec<PathBuf>,
    /// System outputs (one column each).
    #[arg(required = true)]
    pub hyps: Vec<PathBuf>,
    /// Bucket width in source words.
    #[arg(long, default_value_t = 10)]
    pub bucket_width: usize,
    /// Lengths at or above this share the last bucket.
    #[arg(long, default_value_t = 60)]
    pub max_length: usize,
    /// Also draw the picture (.png or .svg).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Source then target vocabulary file (one token per line): adds an All / No-UNK table.
    #[arg(long = "no-unk-vocab", num_args = 1, value_names = ["VOCAB"])]
    pub no_unk_vocab: Vec<PathBuf>,
    /// Lowercase before scoring.
    #[arg(long, short = 'l')]
    pub lowercase: bool,
    /// Tokenizer: none, 13a or intl.
    #[arg(long, short = 't', default_value = "13a")]
    pub tokenize: String,
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    match args.command {
        EvalCommand::Bleu(a) => bleu(a),
        EvalCommand::Chrf(a) => chrf(a),
        EvalCommand::ByLength(a) => by_length(a),
    }
}

/// Read the hypotheses (file or stdin) and every reference, checking line counts.
fn read_hyps_refs(io: &RefHypArgs) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
    let hyps = match &io.hyp {
        Some(p) => read_lines(p)?,
        None => read_lines_from(std::io::stdin().lock(), "<stdin>")?,
    };
    let refs = read_refs(&io.refs, hyps.len())?;
    match &io.src {
        None => Ok((hyps, refs)),
        Some(src) => {
            let sources = read_lines(src)?;
            check_same_length(src, &sources, hyps.len())?;
            let (sv, tv) = vocab_pair(&io.no_unk_vocab)?;
            let keep = known_mask(&sources, &refs, vocab_predicate(&sv), vocab_predicate(&tv));
            let pick = |lines: Vec<String>| -> Vec<String> { lines.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(l, _)| l).collect() };
            Ok((pick(hyps), refs.into_iter().map(pick).collect()))
        }
    }
}

/// The two files of `--no-unk-vocab`, read: source vocabulary, then target vocabulary.
fn vocab_pair(paths: &[PathBuf]) -> anyhow::Result<(HashSet<String>, HashSet<String>)> {
    match paths {
        [sv, tv] => Ok((read_vocab(sv)?, read_vocab(tv)?)),
        _ => anyhow::bail!("--no-unk-vocab takes two files: the source vocabulary, then the target vocabulary"),
    }
}

fn read_refs(paths: &[PathBuf], expected: usize) -> anyhow::Result<Vec<Vec<String>>> {
    paths
        .iter()
        .map(|p| {
            let lines = read_lines(p)?;
            check_same_length(p, &lines, expected)?;
            Ok(lines)
        })
        .collect()
}

fn bleu(a: BleuArgs) -> anyhow::Result<()> {
    let tokenize: Tokenize = a.tokenize.parse()?;
    let opts = BleuOptions { lowercase: a.io.lowercase, tokenize, ..Default::default() };
    let (hyps, refs) = read_hyps_refs(&a.io)?;
    let w = a.io.width;
    if a.io.sentence {
        let scores = sentence_bleus(&hyps, &refs, &opts)?;
        for s in &scores {
            println!("{}", if a.io.json { s.to_json_line(w) } else { s.format(w, false) });
        }
        if !a.io.json {
            if let Some(s) = scores.first() {
                println!("{}", s.signature());
            }
        }
    } else {
        let s = corpus_bleu(&hyps, &refs, &opts)?;
        if a.io.json {
            println!("{}", s.to_json(w));
        } else {
            println!("{}", s.format(w, false));
            println!("{}", s.signature());
        }
    }
    Ok(())
}

fn chrf(a: ChrfArgs) -> anyhow::Result<()> {
    let opts = ChrfOptions { lowercase: a.io.lowercase, ..Default::default() };
    let (hyps, refs) = read_hyps_refs(&a.io)?;
    let w = a.io.width;
    let scores = if a.io.sentence {
        hyps.iter()
            .enumerate()
            .map(|(i, h)| {
                let rs: Vec<&str> = refs.iter().map(|r| r[i].as_str()).collect();
                sentence_chrf(h, &rs, &opts)
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![corpus_chrf(&hyps, &refs, &opts)?]
    };
    for s in &scores {
        match (a.io.json, a.io.sentence) {
            (true, true) => println!("{}", s.to_json_line(w)),
            (true, false) => println!("{}", s.to_json(w)),
            _ => println!("{}", s.format(w, false)),
        }
    }
    if !a.io.json {
        if let Some(s) = scores.first() {
            println!("{}", s.signature());
        }
    }
    Ok(())
}

fn system_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn by_length(a: ByLengthArgs) -> anyhow::Result<()> {
    let tokenize: Tokenize = a.tokenize.parse()?;
    let opts = BleuOptions { lowercase: a.lowercase, tokenize, ..Default::default() };
    let src = read_lines(&a.src)?;
    let refs = read_refs(&a.refs, src.len())?;
    let mut systems = Vec::with_capacity(a.hyps.len());
    for p in &a.hyps {
        let lines = read_lines(p)?;
        check_same_length(p, &lines, src.len())?;
        systems.push((system_name(p), lines));
    }
    let spec = LengthBuckets { width: a.bucket_width, cap: a.max_length };
    let report = bleu_by_length(&src, &refs, &systems, &opts, spec)?;
    print!("{}", report.format_table());
    if !a.no_unk_vocab.is_empty() {
        let (sv, tv) = vocab_pair(&a.no_unk_vocab)?;
        let t = no_unk_report(&src, &refs, &systems, &opts, vocab_predicate(&sv), vocab_predicate(&tv))?;
        println!();
        print!("{}", t.format_table());
    }
    if let Some(out) = &a.plot {
        nmt::eval::plot::plot_by_length(&report, out).with_context(|| format!("drawing {}", out.display()))?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}
