//! The models a server translates with, by name.
//!
//! A model's language pair is the one its file stores (`[data] src_lang`/`tgt_lang`, by default
//! the training files' extensions); a name `xx-yy` of two ISO 639-1 codes overrides it. That
//! pair is how LibreTranslate requests (`"source": "en", "target": "es"`) find their model;
//! with a single model served, any pair is sent to it, as a one-model LibreTranslate would.
use nmt::config::{ModelConfig, SearchConfig};
use nmt::languages::english_name;
use nmt::translate::Translator;
use serde::Serialize;

use crate::error::ServeError;

/// One served model (or ensemble) under its name.
pub struct ServedModel {
    pub name: String,
    pub translator: Translator,
}

impl ServedModel {
    /// Its language pair: the one its name declares (`en-es` → `("en", "es")`, both ISO 639-1
    /// codes), else the one its model file stores.
    pub fn languages(&self) -> Option<(&str, &str)> {
        let named = self.name.split_once('-').filter(|(s, t)| english_name(s).is_some() && english_name(t).is_some());
        named.or_else(|| self.translator.meta.languages.as_ref().map(|l| (l.src.as_str(), l.tgt.as_str())))
    }
}

/// The served models.
pub struct ModelSet {
    models: Vec<ServedModel>,
}

/// What `GET /api/v1/models` says about a model.
#[derive(Debug, Serialize)]
pub struct ModelInfo {
    pub name: String,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    /// Members of its ensemble (1 for a single model).
    pub ensemble_size: usize,
    /// Whether it attends (and so can return alignments).
    pub attention: bool,
    pub source_vocabulary: VocabInfo,
    pub target_vocabulary: VocabInfo,
    /// The defaults a request's search starts from.
    pub search: SearchConfig,
    /// The lead model's whole configuration (architecture, cell, sizes, …).
    pub architecture: ModelConfig,
    /// Training updates behind the lead model.
    pub step: u64,
}

#[derive(Debug, Serialize)]
pub struct VocabInfo {
    pub kind: String,
    pub size: usize,
}

impl ModelSet {
    /// Named models; names must be unique and non-empty.
    pub fn new(models: Vec<ServedModel>) -> Result<Self, ServeError> {
        if models.is_empty() {
            return Err(ServeError::Setup("no model to serve".into()));
        }
        for (i, m) in models.iter().enumerate() {
            if m.name.is_empty() || m.name.contains(char::is_whitespace) {
                return Err(ServeError::Setup(format!("model name {:?} must be one word", m.name)));
            }
            if models[..i].iter().any(|o| o.name == m.name) {
                return Err(ServeError::Setup(format!("two models are named {:?}", m.name)));
            }
        }
        Ok(ModelSet { models })
    }

    /// The index of the model named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.models.iter().position(|m| m.name == name)
    }

    pub fn all(&self) -> &[ServedModel] {
        &self.models
    }

    /// The index of the model for a LibreTranslate language pair: the one named
    /// `source-target`, or for `"auto"` the one with that target. A single model whose
    /// languages are unknown serves any pair (it cannot tell); one whose languages are known
    /// serves only them (issue 44, row 13: `xx→zz` is 404, not the en→es model's answer).
    pub fn for_languages(&self, source: &str, target: &str) -> Option<usize> {
        if self.models.len() == 1 && self.models[0].languages().is_none() {
            return Some(0);
        }
        self.models.iter().position(|m| match m.languages() {
            Some((s, t)) => t == target && (s == source || source == "auto"),
            None => false,
        })
    }

    /// Every language that is a source or a target, in order of appearance, each with the
    /// targets it translates to.
    pub fn language_targets(&self) -> Vec<(String, Vec<String>)> {
        fn slot(code: &str, out: &mut Vec<(String, Vec<String>)>) -> usize {
            match out.iter().position(|(c, _)| c == code) {
                Some(i) => i,
                None => {
                    out.push((code.to_owned(), Vec::new()));
                    out.len() - 1
                }
            }
        }
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (src, tgt) in self.models.iter().filter_map(|m| m.languages()) {
            let i = slot(src, &mut out);
            slot(tgt, &mut out);
            if !out[i].1.iter().any(|t| t == tgt) {
                out[i].1.push(tgt.to_owned());
            }
        }
        out
    }

    /// The distinct source languages of the served models.
    pub fn source_languages(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (src, _) in self.models.iter().filter_map(|m| m.languages()) {
            if !out.contains(&src) {
                out.push(src);
            }
        }
        out
    }

    pub fn info(&self) -> Vec<ModelInfo> {
        self.models
            .iter()
            .map(|m| {
                let t = &m.translator;
                let langs = m.languages();
                let vocab = |s: &nmt::data::Segmenter| VocabInfo { kind: format!("{:?}", s.kind()).to_lowercase(), size: s.vocab_size() };
                ModelInfo {
                    name: m.name.clone(),
                    source_language: langs.map(|l| l.0.to_string()),
                    target_language: langs.map(|l| l.1.to_string()),
                    ensemble_size: t.models().len(),
                    attention: t.models().iter().any(|x| x.has_attention()),
                    source_vocabulary: vocab(&t.meta.src),
                    target_vocabulary: vocab(&t.meta.tgt),
                    search: t.default_search(),
                    architecture: t.model().cfg.clone(),
                    step: t.meta.step,
                }
            })
            .collect()
    }
}
