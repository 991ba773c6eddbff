//! Text in, text out: a loaded model file + search. The CLI, the trainer's validation and the
//! server share this, so they all segment, search and desegment the same way.
use std::path::Path;

use candle_core::{DType, Device};
use nmt_data::EOS;

use crate::config::SearchConfig;
use crate::error::Result;
use crate::model::Seq2Seq;
use crate::model_file::{self, ModelMeta};
use crate::search::{search_all_ext, Hypothesis, SearchOptions};

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

/// A model with its segmenters.
pub struct Translator {
    pub model: Seq2Seq,
    pub meta: ModelMeta,
}

impl Translator {
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        let loaded = model_file::load(path, DType::F32, device)?;
        Ok(Translator { model: loaded.model, meta: loaded.meta })
    }

    /// The model file's search defaults.
    pub fn default_search(&self) -> SearchConfig {
        self.meta.search.clone()
    }

    /// Translates lines (order kept). Empty lines translate to empty output.
    pub fn translate(&self, lines: &[String], opts: &SearchOptions) -> Result<Vec<Translation>> {
        translate_with(&self.model, &self.meta, lines, opts)
    }
}

/// [`Translator::translate`] for a model in hand (the trainer validates with it).
pub fn translate_with(model: &Seq2Seq, meta: &ModelMeta, lines: &[String], opts: &SearchOptions) -> Result<Vec<Translation>> {
    let srcs: Vec<Vec<u32>> = lines
        .iter()
        .map(|l| {
            let mut ids = meta.src.encode(l);
            ids.push(EOS);
            ids
        })
        .collect();
    let read: Vec<Vec<u32>> = srcs
        .iter()
        .map(|s| {
            let mut r = s.clone();
            model.cfg.order_source(&mut r);
            r
        })
        .collect();
    // A copy model's sources in the extended target space, in the encoder's reading order.
    let exts: Option<Vec<nmt_data::copy::Extended>> = model.cfg.copy.then(|| {
        lines
            .iter()
            .map(|l| {
                let mut e = nmt_data::copy::extend_source(l, &meta.src, &meta.tgt);
                model.cfg.order_source(&mut e.src);
                e
            })
            .collect()
    });
    let ext_ids: Option<Vec<Vec<u32>>> = exts.as_ref().map(|v| v.iter().map(|e| e.src.clone()).collect());
    let nbest = search_all_ext(model, &read, ext_ids.as_deref(), opts)?;
    Ok(srcs
        .iter()
        .zip(nbest)
        .enumerate()
        .map(|(i, (src, hyps))| Translation {
            src_pieces: meta.src.pieces(src),
            hyps: hyps
                .into_iter()
                .map(|mut hyp| {
                    // Attention rows are over the order the encoder read; report the source's.
                    for row in hyp.alignment.iter_mut().flatten() {
                        let len = src.len().min(row.len());
                        model.cfg.order_source(&mut row[..len]);
                    }
                    let mut ids = hyp.tokens.clone();
                    if hyp.finished {
                        ids.push(EOS);
                    }
                    let text = match &exts {
                        Some(e) => nmt_data::copy::decode_extended(&hyp.tokens, &meta.tgt, &e[i]),
                        None => meta.tgt.decode(&hyp.tokens),
                    };
                    TranslatedHyp { text, pieces: meta.tgt.pieces(&ids), hyp }
                })
                .collect(),
        })
        .collect())
}
