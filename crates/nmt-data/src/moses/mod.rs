//! Moses's text formats, read and extended byte for byte: phrase tables
//! (`source ||| target ||| features [||| alignment [||| counts …]]`) and n-best lists
//! (`id ||| hypothesis ||| name= v … ||| total [||| …]`).
//!
//! Both are split at their `|||` separators without touching the bytes in between, so that a
//! line with a new feature differs from its input only by that feature (the phrase-table round
//! trip, `tests` of [`phrase_table`]); odd spacing and Unicode pass through. Lines that lack
//! the format's fields, or whose numbers do not parse, are [`Error::Malformed`] with their line
//! number.
//!
//! [`Error::Malformed`]: crate::Error::Malformed
pub mod nbest;
pub mod phrase_table;

use std::ops::Range;

/// The separator between fields.
pub const SEP: &str = "|||";

/// Why one line is malformed (the caller names the file: [`LineError::into_error`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

impl LineError {
    pub fn new(line: usize, reason: impl Into<String>) -> Self {
        LineError { line, reason: reason.into() }
    }

    /// The crate's error, naming `what` was read.
    pub fn into_error(self, what: &str) -> crate::Error {
        crate::Error::Malformed { what: what.to_string(), line: self.line, reason: self.reason }
    }
}

/// The byte ranges of a line's fields between `|||` separators (each with its own spacing).
pub(crate) fn split_fields(line: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(k) = line[start..].find(SEP) {
        out.push(start..start + k);
        start += k + SEP.len();
    }
    out.push(start..line.len());
    out
}

/// Where a new value goes in a space-separated field `f`: right after its last non-space
/// byte, preceded by one space; in a field with nothing in it, after its first space (or at
/// its start). Returns the insertion offset inside `f` and whether a space precedes the value.
/// The "first space" may be any Unicode whitespace (`trim_end`'s notion), so the offset is
/// after its whole character, never inside it (a crash cargo-fuzz found: U+2003, 3 bytes).
pub(crate) fn append_point(f: &str) -> (usize, bool) {
    match f.trim_end().len() {
        0 => (f.chars().next().map_or(0, char::len_utf8), false),
        end => (end, true),
    }
}

/// `line` with `value` appended to field `k` ([`append_point`]).
pub(crate) fn insert_in_field(line: &str, fields: &[Range<usize>], k: usize, value: &str) -> String {
    let f = &fields[k];
    let (at, space) = append_point(&line[f.clone()]);
    let pos = f.start + at;
    let mut out = String::with_capacity(line.len() + value.len() + 1);
    out.push_str(&line[..pos]);
    if space {
        out.push(' ');
    }
    out.push_str(value);
    out.push_str(&line[pos..]);
    out
}

/// Parses every whitespace-separated token of `s` as a number.
pub(crate) fn numbers(s: &str, line: usize, what: &str) -> Result<Vec<f64>, LineError> {
    s.split_whitespace().map(|t| t.parse::<f64>().map_err(|_| LineError::new(line, format!("{what}: `{t}` is not a number")))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_spacing() {
        let l = "a b |||c|||  1 2  ||| x";
        let f: Vec<&str> = split_fields(l).into_iter().map(|r| &l[r]).collect();
        assert_eq!(f, ["a b ", "c", "  1 2  ", " x"]);
        assert_eq!(split_fields("no separator").len(), 1);
    }

    #[test]
    fn append_points() {
        assert_eq!(append_point(" 1 2 "), (4, true));
        assert_eq!(append_point("1"), (1, true));
        assert_eq!(append_point(" "), (1, false));
        assert_eq!(append_point(""), (0, false));
        assert_eq!(append_point("   "), (1, false));
        // A field of Unicode spaces only: after the first whole character.
        assert_eq!(append_point("\u{2003}"), (3, false));
        assert_eq!(append_point("\u{2003} "), (3, false));
    }

    /// The crash cargo-fuzz found (fuzz/artifacts/moses/crash-e53f7ce…, minimised): a feature
    /// field holding only an em space made `with_feature` cut the line inside that character.
    #[test]
    fn a_unicode_space_field_takes_a_feature() {
        let line = "0 ||| a |||\u{2003}||| t";
        let p = phrase_table::PhraseLine::parse(line, 1).unwrap();
        let out = p.with_feature("0.5");
        assert_eq!(out, "0 ||| a |||\u{2003}0.5||| t");
        assert!(phrase_table::PhraseLine::parse(&out, 1).is_ok());
        let mut n = nbest::NbestLine::parse("0 ||| a |||\u{2003}\u{2003}||| -1", 1).unwrap();
        n.add_feature("f", -1.0, Some(0.5));
        assert!(nbest::NbestLine::parse(n.as_str(), 1).is_ok());
    }
}
