//! Ids for copying source words into the output (a pointer/copy model, `model.copy`).
//!
//! A copy model's output space is the target vocabulary (`K_y` ids) extended, per sentence,
//! by the source words the target vocabulary lacks: the `k`-th distinct such word gets id
//! `K_y + k`. Each source position gets the id of its surface in that space (what copying it
//! outputs), and a target word outside the vocabulary that also occurs in the source is
//! trained as that extended id instead of `<unk>` (See et al. 2017's extended vocabulary).
//!
//! Surfaces are whitespace words for word vocabularies and pieces for BPE (whose pieces are
//! never outside its vocabulary, so BPE copies known pieces and extends nothing). The source's
//! `</s>` maps to the target's `</s>`: attention on it at the end votes for ending.
use crate::subword::{Segmenter, SubwordKind};
use crate::{EOS, UNK};

/// A source sentence in its extended target space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extended {
    /// For each source position (`</s>` included): the target-space id copying it outputs.
    pub src: Vec<u32>,
    /// The extended words: id `K_y + k` is `oov[k]`.
    pub oov: Vec<String>,
}

/// Each id's surface: its whitespace word (word vocabularies) or its piece (BPE).
fn surfaces(text: &str, seg: &Segmenter) -> (Vec<u32>, Vec<String>) {
    let w = seg.encode_words(text);
    let surf = match seg.kind() {
        SubwordKind::Word => w.word_of.iter().map(|&i| w.words[i].clone()).collect(),
        SubwordKind::Bpe | SubwordKind::Sentencepiece => seg.pieces(&w.ids),
    };
    (w.ids, surf)
}

/// The source `text` (as `src` segments it, then `</s>`) in `tgt`'s extended space.
pub fn extend_source(text: &str, src: &Segmenter, tgt: &Segmenter) -> Extended {
    let (_, surf) = surfaces(text, src);
    let k_y = tgt.vocab_size() as u32;
    let mut ext = Extended::default();
    for s in surf {
        let id = match tgt.id_of(&s) {
            Some(id) if id != UNK => id,
            _ => match ext.oov.iter().position(|o| *o == s) {
                Some(k) => k_y + k as u32,
                None => {
                    ext.oov.push(s);
                    k_y + ext.oov.len() as u32 - 1
                }
            },
        };
        ext.src.push(id);
    }
    ext.src.push(EOS);
    ext
}

/// The target `text`'s ids (no `</s>`) with each `<unk>` whose surface is an extended source
/// word replaced by that word's id.
pub fn extend_target(text: &str, tgt: &Segmenter, ext: &Extended) -> Vec<u32> {
    let (ids, surf) = surfaces(text, tgt);
    let k_y = tgt.vocab_size() as u32;
    ids.iter()
        .zip(&surf)
        .map(|(&id, s)| match ext.oov.iter().position(|o| o == s) {
            Some(k) if id == UNK => k_y + k as u32,
            _ => id,
        })
        .collect()
}

/// Output ids of the extended space → text: vocabulary ids desegmented by `tgt`, extended ids
/// as their source words (each a word of its own).
pub fn decode_extended(ids: &[u32], tgt: &Segmenter, ext: &Extended) -> String {
    let k_y = tgt.vocab_size() as u32;
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    for (i, &id) in ids.iter().enumerate() {
        if id >= k_y {
            parts.push(tgt.decode(&ids[start..i]));
            parts.push(ext.oov.get((id - k_y) as usize).cloned().unwrap_or_else(|| tgt.decode(&[UNK])));
            start = i + 1;
        }
    }
    parts.push(tgt.decode(&ids[start..]));
    parts.iter().filter(|p| !p.is_empty()).map(String::as_str).collect::<Vec<_>>().join(" ")
}

/// A pair in a copy model's extended space: the target's ids (no `</s>`) and the source's
/// extended ids (`</s>` included).
pub fn extended_pair(src_text: &str, tgt_text: &str, src: &Segmenter, tgt: &Segmenter) -> (Vec<u32>, Extended) {
    let ext = extend_source(src_text, src, tgt);
    (extend_target(tgt_text, tgt, &ext), ext)
}

/// [`crate::examples`] for a copy model: targets in each pair's extended space, and each
/// source's extended ids (`</s>` included) beside the examples, index for index.
pub fn copy_examples(
    corpus: &crate::ParallelCorpus,
    src: &Segmenter,
    tgt: &Segmenter,
    max_len: Option<usize>,
) -> (Vec<crate::Example>, Vec<Vec<u32>>) {
    let (mut out, mut exts) = (Vec::with_capacity(corpus.src.len()), Vec::with_capacity(corpus.src.len()));
    for (s_text, t_text) in corpus.src.iter().zip(&corpus.tgt) {
        let mut s = src.encode(s_text);
        let (mut t, ext) = extended_pair(s_text, t_text, src, tgt);
        if max_len.is_some_and(|m| s.len() > m || t.len() > m) {
            continue;
        }
        s.push(EOS);
        t.push(EOS);
        out.push(crate::Example { src: s, tgt: t });
        exts.push(ext.src);
    }
    (out, exts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subword::SubwordConfig;

    fn words(lines: &[&str]) -> Segmenter {
        let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        Segmenter::train(&lines, &SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None }).unwrap()
    }

    #[test]
    fn names_get_extended_ids_in_source_and_target_and_decode_back() {
        let (src, tgt) = (words(&["and jesus said to peter"]), words(&["y jesús dijo a"]));
        let k_y = tgt.vocab_size() as u32;
        // "jesús" is a target word; "Zebedee" and "Salome" are in neither vocabulary.
        let ext = extend_source("Zebedee said to Salome Zebedee", &src, &tgt);
        assert_eq!(ext.oov, ["Zebedee", "said", "to", "Salome"]);
        assert_eq!(ext.src, [k_y, k_y + 1, k_y + 2, k_y + 3, k_y, EOS]);
        let t = extend_target("y Zebedee dijo a Salome María", &tgt, &ext);
        let (y, dijo, a) = (tgt.encode("y")[0], tgt.encode("dijo")[0], tgt.encode("a")[0]);
        assert_eq!(t, [y, k_y, dijo, a, k_y + 3, UNK], "a word the source lacks stays <unk>");
        assert_eq!(decode_extended(&t, &tgt, &ext), "y Zebedee dijo a Salome <unk>");
        // A source word the target vocabulary has is copied as that word.
        let known = extend_source("y", &src, &tgt);
        assert_eq!((known.src[0], known.oov.len()), (y, 0));
    }
}
