//! Text in, text out: a loaded model file + search. The CLI, the trainer's validation and the
//! server share this, so they all segment, search and desegment the same way.
use std::borrow::Borrow;
use std::path::Path;

use candle_core::{DType, Device};
use nmt_data::copy::Extended;
use nmt_data::EOS;

use crate::config::SearchConfig;
use crate::error::Result;
use crate::model::Seq2Seq;
use crate::model_file::{self, ModelMeta};
use crate::search::{Hypothesis, SearchOptions, Searcher};

/// One translated sentence: its n-best list, best first.
#[derive(Clone, Debug)]
pub struct Translation {
    pub hyps: Vec<TranslatedHyp>,
    /// Source subword pieces (with `</s>`), for alignment pictures.
    pub src_pieces: Vec<String>,
}

/// A hypothesis as text.
#[derive(Clone, Debug)]
pub struct TranslatedHyp {
    pub text: String,
    pub hyp: Hypothesis,
    /// Target pieces, `</s>` appended when the hypothesis finished.
    pub pieces: Vec<String>,
}

/// A model, or an ensemble of models (`crate::search::ensemble`), with its segmenters and
/// search defaults (the first model's).
pub struct Translator {
    /// The models, the lead first, and their host snapshots.
    pub searcher: Searcher,
    pub meta: ModelMeta,
}

impl Translator {
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        Self::load_ensemble(&[path], device)
    }

    /// Loads an ensemble; the models must share both vocabularies, since their distributions
    /// are averaged token by token over the same target vocabulary and they read the same
    /// source ids (and a copy model's extended ids must mean the same words for all).
    pub fn load_ensemble(paths: &[&Path], device: &Device) -> Result<Self> {
        let Some((first, rest)) = paths.split_first() else {
            return Err(crate::error::Error::Input("no model to load".into()));
        };
        let lead = model_file::load(first, DType::F32, device)?;
        let (src, tgt) = (lead.meta.src.to_json()?, lead.meta.tgt.to_json()?);
        let mut models = vec![lead.model];
        for p in rest {
            let m = model_file::load(p, DType::F32, device)?;
            for (side, a, b) in [("source", &src, m.meta.src.to_json()?), ("target", &tgt, m.meta.tgt.to_json()?)] {
                if *a != b {
                    return Err(crate::error::Error::Input(format!(
                        "{} and {} have different {side} vocabularies; an ensemble's models must share both",
                        first.display(),
                        p.display()
                    )));
                }
            }
            models.push(m.model);
        }
        let searcher = Searcher::new(models)?.with_shortlist(lead.meta.shortlist.clone());
        Ok(Translator { searcher, meta: lead.meta })
    }

    /// The lead model: its search defaults and source reading order are the ensemble's.
    pub fn model(&self) -> &Seq2Seq {
        self.searcher.lead()
    }

    /// Every model, the lead first.
    pub fn models(&self) -> Vec<&Seq2Seq> {
        self.searcher.models()
    }

    /// The model file's search defaults.
    pub fn default_search(&self) -> SearchConfig {
        self.meta.search.clone()
    }

    /// Translates lines (order kept). Empty lines translate to empty output.
    pub fn translate(&self, lines: &[String], opts: &SearchOptions) -> Result<Vec<Translation>> {
        translate_lines(&self.searcher, &self.meta, lines, opts)
    }
}

/// [`Translator::translate`] with any searcher (the trainer validates with one that borrows
/// the model it trains), in four steps: the sources as ids (`source_ids`) in the encoder's
/// reading order, with a copy model's extended ids (`copy_sources`); the n-best lists
/// (`nbest_lists`); each sentence's hypotheses as text (`translation`).
pub fn translate_lines<M: Borrow<Seq2Seq> + Sync>(
    searcher: &Searcher<M>,
    meta: &ModelMeta,
    lines: &[String],
    opts: &SearchOptions,
) -> Result<Vec<Translation>> {
    let model = searcher.lead();
    let lines: Vec<&str> = lines.iter().enumerate().map(|(i, l)| crop_text(l, i, opts.cfg.max_source_len)).collect();
    let srcs = source_ids(meta, &lines, opts.cfg.max_source_len);
    let read: Vec<Vec<u32>> = srcs.iter().map(|s| reading_order(model, s.clone())).collect();
    let exts = searcher.models().iter().any(|m| m.cfg.copy()).then(|| copy_sources(model, meta, &lines, &srcs));
    let nbest = nbest_lists(searcher, meta, (&lines, &read), exts.as_deref(), opts)?;
    Ok(srcs
        .iter()
        .zip(nbest)
        .enumerate()
        .map(|(i, (src, hyps))| translation(model, meta, src, hyps, exts.as_ref().map(|e| &e[i])))
        .collect())
}

/// Each line's source ids, `</s>` last, at most `max_source_len` before it (a longer one is
/// cropped, with a warning naming its line).
fn source_ids(meta: &ModelMeta, lines: &[&str], max_source_len: usize) -> Vec<Vec<u32>> {
    let limit = max_source_len.max(1);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut ids = meta.src.encode(l);
            if ids.len() > limit {
                tracing::warn!("sentence {}: {} source tokens, cropped to the first {limit} (max_source_len)", i + 1, ids.len());
                ids.truncate(limit);
            }
            ids.push(EOS);
            ids
        })
        .collect()
}

/// `ids` in the order the encoder reads them (`model.reverse_source`).
fn reading_order<T>(model: &Seq2Seq, mut ids: Vec<T>) -> Vec<T> {
    model.cfg.order_source(&mut ids);
    ids
}

/// A copy model's sources in the extended target space, cropped like the source ids `srcs`
/// (`</s>` kept last) and in the encoder's reading order.
fn copy_sources(model: &Seq2Seq, meta: &ModelMeta, lines: &[&str], srcs: &[Vec<u32>]) -> Vec<Extended> {
    lines
        .iter()
        .zip(srcs)
        .map(|(l, ids)| {
            let mut e = nmt_data::copy::extend_source(l, &meta.src, &meta.tgt);
            if e.src.len() > ids.len() {
                e.src.truncate(ids.len() - 1);
                e.src.push(EOS);
            }
            e.src = reading_order(model, e.src);
            e
        })
        .collect()
}

/// Each sentence's n-best list: the search's, over the `read` ids of the `lines`. An empty or
/// whitespace-only sentence (only `</s>`) translates to an empty one: searched, the model would
/// emit up to `max_len_extra` tokens (issue 44, row 11). Its hypothesis is `</s>` alone, with
/// the models' own probability of it (one scoring step, not a search); its one attention row
/// is over the one source token, `</s>`, so it is 1.
fn nbest_lists<M: Borrow<Seq2Seq> + Sync>(
    searcher: &Searcher<M>,
    meta: &ModelMeta,
    (lines, read): (&[&str], &[Vec<u32>]),
    exts: Option<&[Extended]>,
    opts: &SearchOptions,
) -> Result<Vec<Vec<Hypothesis>>> {
    let models = searcher.models();
    let (todo, empties): (Vec<usize>, Vec<usize>) = (0..read.len()).partition(|&i| read[i].len() > 1);
    let ext_ids: Option<Vec<Vec<u32>>> = exts.map(|v| todo.iter().map(|&i| v[i].src.clone()).collect());
    let found = match todo.is_empty() {
        true => Vec::new(),
        false => searcher.search(&todo.iter().map(|&i| read[i].clone()).collect::<Vec<_>>(), ext_ids.as_deref(), opts)?,
    };
    let pairs: Vec<(String, String)> = empties.iter().map(|&i| (lines[i].to_owned(), String::new())).collect();
    let scored = match pairs.is_empty() {
        true => Vec::new(),
        false => crate::score::score_pairs(&models, meta, &pairs, pairs.len())?,
    };
    let mut nbest: Vec<Vec<Hypothesis>> = vec![Vec::new(); read.len()];
    for (i, hyps) in todo.into_iter().zip(found) {
        nbest[i] = hyps;
    }
    let alignment = (opts.alignments && models.iter().any(|m| m.has_attention())).then(|| vec![vec![1.0]]);
    for (i, p) in empties.into_iter().zip(scored) {
        let alignment = alignment.clone();
        nbest[i] = vec![Hypothesis { tokens: Vec::new(), log_prob: p.log_prob, score: p.log_prob, finished: true, alignment }];
    }
    Ok(nbest)
}

/// One sentence's hypotheses as text and pieces, its attention rows over the source `src` in
/// the source's order; `ext` decodes a copy model's copied words.
fn translation(model: &Seq2Seq, meta: &ModelMeta, src: &[u32], hyps: Vec<Hypothesis>, ext: Option<&Extended>) -> Translation {
    let hyps = hyps
        .into_iter()
        .map(|mut hyp| {
            for row in hyp.alignment.iter_mut().flatten() {
                // One weight per source token: the batch's padding is cut off.
                row.truncate(src.len());
                model.cfg.order_source(row);
            }
            let mut ids = hyp.tokens.clone();
            if hyp.finished {
                ids.push(EOS);
            }
            let text = match ext {
                Some(e) => nmt_data::copy::decode_extended(&hyp.tokens, &meta.tgt, e),
                None => meta.tgt.decode(&hyp.tokens),
            };
            TranslatedHyp { text, pieces: meta.tgt.pieces(&ids), hyp }
        })
        .collect();
    Translation { src_pieces: meta.src.pieces(src), hyps }
}

/// Bytes kept of a line before segmenting it: no token is longer than this many bytes per
/// token on average, so cropping here never loses what the token limit keeps, and a 10 MB line
/// is not segmented whole.
const BYTES_PER_TOKEN: usize = 64;

/// `line` cut (at a character boundary) to what `max_tokens` tokens can need.
fn crop_text(line: &str, index: usize, max_tokens: usize) -> &str {
    let limit = max_tokens.max(1).saturating_mul(BYTES_PER_TOKEN);
    if line.len() <= limit {
        return line;
    }
    let mut end = limit;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    tracing::warn!("sentence {}: {} bytes, cropped to {end} before segmenting (max_source_len)", index + 1, line.len());
    &line[..end]
}
