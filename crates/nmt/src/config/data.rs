//! `[data]`: where the corpora are and how they are cut into subwords.
use std::path::{Path, PathBuf};

use nmt_data::shards::{Corpus, Encoding, PrepareOptions};
use nmt_data::subword::{SubwordConfig, SubwordKind};
use nmt_data::PairFiles;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::languages::{checked, from_file_name, Languages};

/// Corpus locations and preprocessing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    /// Training source / target text, one sentence a line (`.gz` read transparently).
    pub train_src: PathBuf,
    pub train_tgt: PathBuf,
    /// Instead of `train_src`/`train_tgt`: one `source<TAB>target` file (`train = "x.tsv"`), or
    /// several corpora with sampling weights
    /// (`train = [{src = "a.en", tgt = "a.es"}, {tsv = "b.tsv", weight = 0.5}]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainInput>,
    /// Development set for validation (perplexity and BLEU).
    pub dev_src: PathBuf,
    pub dev_tgt: PathBuf,
    /// Source and target subword models (learned from the training text).
    pub src_subword: SubwordConfig,
    pub tgt_subword: SubwordConfig,
    /// Skip training pairs longer than this many words on either side before segmentation.
    pub max_words: Option<usize>,
    /// Skip training pairs longer than this many subword tokens (RNNsearch-30/-50's limit).
    pub max_len: usize,
    /// Learn the subword models from a uniform sample of at most this many pairs (Marian's
    /// `--sentencepiece-max-lines`); smaller corpora are learned from whole.
    pub subword_sample: usize,
    /// Pairs per shard file of the prepared corpus.
    pub shard_pairs: u64,
    /// The languages' ISO 639-1 codes, stored in the model file (what `nmt serve` lists); by
    /// default the training files' last extension before `.gz` (`train.en.gz` → `en`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_lang: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tgt_lang: Option<String>,
}

/// `data.train`: a TSV file, or a list of corpora.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum TrainInput {
    Tsv(PathBuf),
    Corpora(Vec<CorpusEntry>),
}

/// One corpus of `data.train = [...]`: `src` and `tgt`, or `tsv`; `weight` (default 1) is how
/// many times per epoch its pairs are seen on average.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CorpusEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tgt: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsv: Option<PathBuf>,
    #[serde(default = "unit_weight")]
    pub weight: f64,
}

fn unit_weight() -> f64 {
    1.0
}

impl Default for DataConfig {
    fn default() -> Self {
        let sub = SubwordConfig { kind: SubwordKind::Bpe, vocab_size: 8000, min_frequency: 2, model: None };
        DataConfig {
            train_src: PathBuf::new(),
            train_tgt: PathBuf::new(),
            train: None,
            dev_src: PathBuf::new(),
            dev_tgt: PathBuf::new(),
            src_subword: sub.clone(),
            tgt_subword: sub,
            max_words: Some(80),
            max_len: 50,
            subword_sample: 2_000_000,
            shard_pairs: 1_000_000,
            src_lang: None,
            tgt_lang: None,
        }
    }
}

impl DataConfig {
    /// Makes relative paths relative to `base` (the config file's folder).
    pub fn resolve_paths(&mut self, base: &Path) {
        self.for_each_path(|p| {
            if !p.as_os_str().is_empty() && p.is_relative() {
                *p = base.join(&*p);
            }
        });
    }

    /// Applies `fix` to every file path of the section.
    pub fn for_each_path(&mut self, mut fix: impl FnMut(&mut PathBuf)) {
        [&mut self.train_src, &mut self.train_tgt, &mut self.dev_src, &mut self.dev_tgt].into_iter().for_each(&mut fix);
        self.src_subword.model.iter_mut().chain(self.tgt_subword.model.iter_mut()).for_each(&mut fix);
        match &mut self.train {
            Some(TrainInput::Tsv(p)) => fix(p),
            Some(TrainInput::Corpora(list)) => {
                for c in list {
                    c.src.iter_mut().chain(c.tgt.iter_mut()).chain(c.tsv.iter_mut()).for_each(&mut fix);
                }
            }
            None => {}
        }
    }

    /// The training corpora with their weights.
    ///
    /// # Errors
    /// [`Error::Config`] when both or neither of `train` and `train_src`/`train_tgt` are given,
    /// or a corpus entry is not `src`+`tgt` or `tsv`, or has a negative weight.
    pub fn corpora(&self) -> Result<Vec<Corpus>> {
        let pair_keys = !self.train_src.as_os_str().is_empty() || !self.train_tgt.as_os_str().is_empty();
        match (&self.train, pair_keys) {
            (Some(_), true) => Err(Error::Config("give data.train or data.train_src/train_tgt, not both".into())),
            (None, false) => Err(Error::Config("no training data: set data.train_src and data.train_tgt, or data.train".into())),
            (None, true) => {
                Ok(vec![Corpus { files: PairFiles::Aligned { src: self.train_src.clone(), tgt: self.train_tgt.clone() }, weight: 1.0 }])
            }
            (Some(TrainInput::Tsv(p)), false) => Ok(vec![Corpus { files: PairFiles::Tsv(p.clone()), weight: 1.0 }]),
            (Some(TrainInput::Corpora(list)), false) => list.iter().enumerate().map(|(i, c)| c.corpus(i)).collect(),
        }
    }

    /// What `nmt prepare` (or `nmt train` from text) does with this section; `copy` is
    /// `model.copy` (copy models store extended ids).
    pub fn prepare_options(&self, copy: bool) -> Result<PrepareOptions> {
        if self.shard_pairs == 0 {
            return Err(Error::Config("data.shard_pairs must be at least 1".into()));
        }
        let encoding = Encoding {
            src_subword: self.src_subword.clone(),
            tgt_subword: self.tgt_subword.clone(),
            max_words: self.max_words,
            max_len: self.max_len,
            subword_sample: self.subword_sample,
            copy,
        };
        Ok(PrepareOptions { corpora: self.corpora()?, encoding, shard_pairs: self.shard_pairs })
    }
}

impl DataConfig {
    /// The language pair: `src_lang`/`tgt_lang`, else the extensions of the first corpus's
    /// aligned files; `None` when a side is unknown.
    ///
    /// # Errors
    /// [`Error::Config`] when a given code is not ISO 639-1.
    pub fn languages(&self) -> Result<Option<Languages>> {
        let files = self.corpora().ok().and_then(|c| match c.into_iter().next().map(|c| c.files) {
            Some(PairFiles::Aligned { src, tgt }) => Some((src, tgt)),
            _ => None,
        });
        let side = |given: &Option<String>, key: &str, file: Option<&PathBuf>| -> Result<Option<String>> {
            match given {
                Some(code) => checked(code, key).map(Some),
                None => Ok(file.and_then(|f| from_file_name(f))),
            }
        };
        let src = side(&self.src_lang, "data.src_lang", files.as_ref().map(|f| &f.0))?;
        let tgt = side(&self.tgt_lang, "data.tgt_lang", files.as_ref().map(|f| &f.1))?;
        Ok(src.zip(tgt).map(|(src, tgt)| Languages { src, tgt }))
    }
}

impl CorpusEntry {
    fn corpus(&self, i: usize) -> Result<Corpus> {
        if !(self.weight >= 0.0 && self.weight.is_finite()) {
            return Err(Error::Config(format!("data.train[{i}].weight must be a number ≥ 0, got {}", self.weight)));
        }
        let files = match (&self.src, &self.tgt, &self.tsv) {
            (Some(s), Some(t), None) => PairFiles::Aligned { src: s.clone(), tgt: t.clone() },
            (None, None, Some(p)) => PairFiles::Tsv(p.clone()),
            _ => return Err(Error::Config(format!("data.train[{i}] needs src and tgt, or tsv alone"))),
        };
        Ok(Corpus { files, weight: self.weight })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn data(toml: &str) -> Result<DataConfig> {
        Ok(Config::from_toml_str(&format!("[data]\n{toml}"), &[])?.data)
    }

    #[test]
    fn the_forms_of_train_and_their_errors() {
        let tsv = data("train = \"x.tsv\"").unwrap();
        assert_eq!(tsv.corpora().unwrap(), [Corpus { files: PairFiles::Tsv("x.tsv".into()), weight: 1.0 }]);
        let list = data("train = [{ src = \"a.en\", tgt = \"a.es\" }, { tsv = \"b.tsv\", weight = 0.5 }]").unwrap();
        let c = list.corpora().unwrap();
        assert_eq!(c[0].files, PairFiles::Aligned { src: "a.en".into(), tgt: "a.es".into() });
        assert_eq!((c[1].files.clone(), c[1].weight), (PairFiles::Tsv("b.tsv".into()), 0.5));
        assert!(data("train = \"x.tsv\"\ntrain_src = \"a\"").unwrap().corpora().is_err(), "both forms");
        assert!(data("").unwrap().corpora().is_err(), "neither");
        assert!(data("train = [{ src = \"a.en\" }]").unwrap().corpora().is_err(), "src without tgt");
        assert!(data("train = [{ tsv = \"b\", weight = -1 }]").unwrap().corpora().is_err(), "negative weight");
        assert!(data("train = [{ tsv = \"b\", wieght = 1 }]").is_err(), "unknown key");
    }

    #[test]
    fn languages_from_keys_or_file_names() {
        let guessed = data("train_src = \"d/train.en.gz\"\ntrain_tgt = \"d/train.es.gz\"").unwrap();
        assert_eq!(guessed.languages().unwrap(), Some(Languages { src: "en".into(), tgt: "es".into() }));
        let given = data("train = \"x.tsv\"\nsrc_lang = \"fr\"\ntgt_lang = \"de\"").unwrap();
        assert_eq!(given.languages().unwrap(), Some(Languages { src: "fr".into(), tgt: "de".into() }));
        assert_eq!(data("train = \"x.tsv\"").unwrap().languages().unwrap(), None);
        assert!(data("train = \"x.tsv\"\nsrc_lang = \"english\"\ntgt_lang = \"es\"").unwrap().languages().is_err());
    }
}
