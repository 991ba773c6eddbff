//! Phrase representations (Cho et al. 2014, §4.2 and Figure 4: the RNN Encoder-Decoder's
//! summary vectors of phrases, projected to 2-D, put semantically and syntactically similar
//! phrases together).
//!
//! What a line's vector is, by architecture:
//! - RNNenc (any encoder: RNN, grConv): the summary `c = tanh(V h_T)` `(n)`, the one vector
//!   the decoder reads (appendix A of RNNsearch; `model/attention_decoder.rs`).
//! - RNNsearch: the encoder's final states of both directions, `[→h_T ; ←h_1]` `(2n)` — the
//!   forward RNN after the last token (`</s>`) and the backward one after the first word, each
//!   having read the whole sentence. The decoder reads the annotations through attention, so no
//!   single vector is "the" representation; these two are what the decoder's start state is
//!   computed from (`←h_1`) and its symmetric twin.
use nmt_data::EOS;

use crate::error::Result;
use crate::model::decoder::Memory;
use crate::model::Seq2Seq;
use crate::model_file::ModelMeta;

/// Which vector [`embed_lines`] returns (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    /// RNNenc's summary `c`.
    Summary,
    /// RNNsearch's `[→h_T ; ←h_1]`.
    FinalStates,
}

impl Representation {
    pub fn describe(self) -> &'static str {
        match self {
            Representation::Summary => "the summary vector c (RNNenc)",
            Representation::FinalStates => "the encoder's final states [forward h_T ; backward h_1] (RNNsearch)",
        }
    }
}

/// One vector per line, in input order, `batch_size` lines per batch.
pub fn embed_lines(model: &Seq2Seq, meta: &ModelMeta, lines: &[String], batch_size: usize) -> Result<(Representation, Vec<Vec<f32>>)> {
    let srcs: Vec<Vec<u32>> = lines
        .iter()
        .map(|l| {
            let mut ids = meta.src.encode(l);
            ids.push(EOS);
            model.cfg.order_source(&mut ids);
            ids
        })
        .collect();
    let per = batch_size.max(1);
    let cfg = nmt_data::BatchConfig { max_tokens: per * 100, max_sentences: per };
    let mut out = vec![Vec::new(); lines.len()];
    let kind = if model.has_attention() { Representation::FinalStates } else { Representation::Summary };
    for batch in nmt_data::inference_batches(&srcs, &cfg) {
        let enc = model.encode(&batch)?;
        let rows: Vec<Vec<f32>> = match &enc.memory {
            Memory::Summary(mem) => mem.c.to_dtype(candle_core::DType::F32)?.to_vec2()?,
            Memory::Attention(mem) => {
                let a: Vec<Vec<Vec<f32>>> = mem.annotations.to_dtype(candle_core::DType::F32)?.to_vec3()?;
                let n = model.cfg.hidden_dim;
                a.iter()
                    .zip(&batch.src_lengths)
                    .map(|(sent, &len)| {
                        let last = &sent[len.max(1) - 1];
                        last[..n].iter().chain(&sent[0][n..2 * n]).copied().collect()
                    })
                    .collect()
            }
        };
        for (&i, row) in batch.indices.iter().zip(rows) {
            out[i] = row;
        }
    }
    Ok((kind, out))
}
