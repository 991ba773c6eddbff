//! `nmt convert --from marian MODEL.npz --vocabs SRC TGT -o OUT`: a model trained by another
//! toolkit as an nmt model file (`nmt::convert`). Everything nmt does with its own models then
//! works on it: `translate` (with `--int8`, `--shortlist`), `score`, `serve`, ensembles.
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use nmt::languages::{checked, from_file_name, Languages};

/// The toolkits whose models convert.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum From {
    /// Marian's `s2s` models (`model.npz`, with `special:model.yml`).
    Marian,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Which toolkit trained the model.
    #[arg(long, value_enum)]
    pub from: From,
    /// The model file (Marian: `model.npz`).
    pub model: PathBuf,
    /// The source and the target vocabulary, as the model was trained with them (Marian:
    /// SentencePiece `.spm`, or word vocabularies `.yml` / `.json`).
    #[arg(long, num_args = 2, value_names = ["SRC", "TGT"], required = true)]
    pub vocabs: Vec<PathBuf>,
    /// The nmt model file to write (atomically).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Source language (ISO 639-1); default: the source vocabulary's name (`vocab.en.spm`).
    #[arg(long)]
    pub src_lang: Option<String>,
    /// Target language (ISO 639-1); default: the target vocabulary's name.
    #[arg(long)]
    pub tgt_lang: Option<String>,
}

/// The language pair: the flags, else the vocabularies' names; none when either is unknown.
fn languages(args: &ConvertArgs) -> Result<Option<Languages>> {
    let code = |flag: &Option<String>, key: &str, vocab: &PathBuf| -> Result<Option<String>> {
        match flag {
            Some(c) => Ok(Some(checked(c, key)?)),
            None => Ok(vocab.file_stem().and_then(|s| from_file_name(std::path::Path::new(s)))),
        }
    };
    let src = code(&args.src_lang, "--src-lang", &args.vocabs[0])?;
    let tgt = code(&args.tgt_lang, "--tgt-lang", &args.vocabs[1])?;
    Ok(src.zip(tgt).map(|(src, tgt)| Languages { src, tgt }))
}

pub fn run(args: ConvertArgs) -> Result<()> {
    let [src, tgt] = args.vocabs.as_slice() else { bail!("--vocabs takes two files: the source's and the target's") };
    super::io::check_distinct(&[Some(args.model.as_path()), Some(src.as_path()), Some(tgt.as_path())], &[Some(args.output.as_path())])?;
    let langs = languages(&args)?;
    if langs.is_none() {
        eprintln!("nmt convert: the languages are unknown (give --src-lang and --tgt-lang to store them)");
    }
    let done = match args.from {
        From::Marian => nmt::convert::marian(&args.model, [src, tgt], langs, &args.output)?,
    };
    let o = &done.options;
    eprintln!(
        "wrote {} ({:.1} MB): {}; emb {}, GRU {}, vocabularies {} and {}{}",
        args.output.display(),
        done.bytes as f64 / 1e6,
        done.converted_from,
        o.dim_emb,
        o.dim_rnn,
        o.dim_vocabs[0],
        o.dim_vocabs[1],
        if o.tied_embeddings { ", tied target embeddings" } else { "" }
    );
    Ok(())
}
