//! The language pair a model translates, stored in its model file (`languages` metadata), so
//! that a server can list it (LibreTranslate's `/languages`) without being told.
//!
//! Codes are ISO 639-1 (`en`, `es`), checked against the `isolang` table, which also gives
//! each code its English name. By default they are read off the training files' names: the
//! last extension before `.gz` (`train.en.gz` → `en`), when it is such a code.
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A model's source and target languages (ISO 639-1 codes).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Languages {
    pub src: String,
    pub tgt: String,
}

/// The English name of an ISO 639-1 code (`"en"` → `"English"`), if it is one.
pub fn english_name(code: &str) -> Option<&'static str> {
    isolang::Language::from_639_1(code).map(|l| l.to_name())
}

/// A code checked to be ISO 639-1.
///
/// # Errors
/// [`Error::Config`] naming `key` when `code` is not a two-letter ISO 639-1 code.
pub fn checked(code: &str, key: &str) -> Result<String> {
    match english_name(code) {
        Some(_) => Ok(code.to_owned()),
        None => Err(Error::Config(format!("{key} = {code:?} is not an ISO 639-1 language code (like \"en\" or \"es\")"))),
    }
}

/// The language code a file's name carries: its last extension before `.gz`, when that is an
/// ISO 639-1 code (`train.en.gz` → `en`; `corpus.tsv` → none).
pub fn from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    english_name(&ext).map(|_| ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_from_file_names() {
        assert_eq!(from_file_name(Path::new("data/train.en.gz")).as_deref(), Some("en"));
        assert_eq!(from_file_name(Path::new("europarl.ES")).as_deref(), Some("es"));
        assert_eq!(from_file_name(Path::new("corpus.tsv")), None);
        assert_eq!(from_file_name(Path::new("t.src")), None);
        assert_eq!(from_file_name(Path::new("noext")), None);
        assert_eq!(english_name("es"), Some("Spanish"));
        assert!(checked("xx", "data.src_lang").is_err());
    }
}
