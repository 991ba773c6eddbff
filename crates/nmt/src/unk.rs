//! UNK replacement (Luong et al. 2015; Jean et al. 2015): each `<unk>` a model outputs becomes
//! the source word it attended to most, or that word's entry in a bilingual dictionary.
//!
//! The papers' word-level vocabularies (30 000 words) send every rarer word to `<unk>`; their
//! tables report BLEU with and without such sentences. An attention model knows where each
//! output word came from, so the `<unk>` can be filled in after the search, which changes no
//! score and no hypothesis ranking. With subword vocabularies `<unk>` only comes from unseen
//! characters, and a replaced `<unk>` stands as a word of its own.
//!
//! Dictionary files have one entry a line, `source target [probability]`, whitespace-separated
//! (the format of fast_align/Moses lexical tables, `lex.e2f`, reduced to two or three
//! columns): the most probable target of each source word is kept, the first listed on ties.
use std::collections::HashMap;
use std::path::Path;

use nmt_data::{Segmenter, WordIds, UNK};

use crate::error::{Error, Result};
use crate::search::hypothesis::Hypothesis;
use crate::translate::Translation;

/// Replaces `<unk>` tokens from attention, with an optional dictionary.
#[derive(Clone, Debug, Default)]
pub struct UnkReplacer {
    dict: HashMap<String, (String, f64)>,
}

impl UnkReplacer {
    /// Copies the attended source word itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Translates the attended source word through the dictionary at `path` (copied when absent).
    pub fn with_dictionary(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse_dictionary(&text).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
    }

    /// Parses dictionary text (see the module docs); errors name the line.
    pub fn parse_dictionary(text: &str) -> std::result::Result<Self, String> {
        let mut dict: HashMap<String, (String, f64)> = HashMap::new();
        for (no, line) in text.lines().enumerate() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (src, tgt, p) = match cols[..] {
                [] => continue,
                [s, t] => (s, t, 1.0),
                [s, t, p] => match p.parse::<f64>() {
                    Ok(p) if p.is_finite() => (s, t, p),
                    _ => return Err(format!("line {}: {p:?} is not a probability", no + 1)),
                },
                _ => return Err(format!("line {}: expected `source target [probability]`, got {} columns", no + 1, cols.len())),
            };
            let better = dict.get(src).is_none_or(|&(_, best)| p > best);
            if better {
                dict.insert(src.to_owned(), (tgt.to_owned(), p));
            }
        }
        Ok(UnkReplacer { dict })
    }

    /// What replaces an `<unk>` aligned to source word `word`.
    pub fn replacement<'a>(&'a self, word: &'a str) -> &'a str {
        self.dict.get(word).map_or(word, |(t, _)| t.as_str())
    }

    /// The text of `hyp` with every `<unk>` replaced. `src` is the source as
    /// [`Segmenter::encode_words`] gives it; `hyp.alignment` has one row per output token over
    /// the source ids and `</s>` in the source's own order. The `</s>` column is never chosen.
    pub fn replace(&self, hyp: &Hypothesis, src: &WordIds, tgt: &Segmenter) -> Result<String> {
        let rows = hyp.alignment.as_ref().ok_or_else(|| Error::Config("UNK replacement needs the attention weights".into()))?;
        let mut parts: Vec<String> = Vec::new();
        let mut run_start = 0;
        for (i, &tok) in hyp.tokens.iter().enumerate() {
            if tok != UNK {
                continue;
            }
            parts.push(tgt.decode(&hyp.tokens[run_start..i]));
            let row = rows.get(i).map_or(&[][..], Vec::as_slice);
            let best = row.iter().take(src.ids.len()).enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(j, _)| j);
            parts.push(match best {
                Some(j) => self.replacement(&src.words[src.word_of[j]]).to_owned(),
                None => tgt.decode(&[UNK]),
            });
            run_start = i + 1;
        }
        parts.push(tgt.decode(&hyp.tokens[run_start..]));
        Ok(parts.iter().filter(|p| !p.is_empty()).map(String::as_str).collect::<Vec<_>>().join(" "))
    }

    /// Rewrites the text of every hypothesis of `out`, translated from `lines` by a model
    /// whose source segmenter is `src`, target segmenter `tgt`, with alignments recorded.
    pub fn apply(&self, lines: &[String], out: &mut [Translation], src: &Segmenter, tgt: &Segmenter) -> Result<()> {
        for (line, t) in lines.iter().zip(out) {
            let words = src.encode_words(line);
            for h in &mut t.hyps {
                if h.hyp.tokens.contains(&UNK) {
                    h.text = self.replace(&h.hyp, &words, tgt)?;
                }
            }
        }
        Ok(())
    }
}
