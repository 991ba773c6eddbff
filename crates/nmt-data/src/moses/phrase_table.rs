//! Moses phrase-table lines: `source ||| target ||| f1 f2 … [||| alignment [||| counts …]]`.
//!
//! A model's score becomes one more feature, appended to the third field (Cho et al. 2014,
//! docs/MODELS.md#scoring, "Using a trained model": the RNN Encoder-Decoder's `p(f | e)` as a feature
//! of a phrase-based system). Every other byte of the line passes through unchanged.
use std::ops::Range;

use super::{insert_in_field, numbers, split_fields, LineError};

/// One phrase-table line, split at its separators.
#[derive(Clone, Debug)]
pub struct PhraseLine<'a> {
    line: &'a str,
    fields: Vec<Range<usize>>,
}

impl<'a> PhraseLine<'a> {
    /// Splits line `lineno` (1-based, for errors): at least three fields, the third a list
    /// of numbers.
    pub fn parse(line: &'a str, lineno: usize) -> Result<Self, LineError> {
        let fields = split_fields(line);
        if fields.len() < 3 {
            return Err(LineError::new(
                lineno,
                format!("a phrase-table line needs `source ||| target ||| features`, found {} field(s)", fields.len()),
            ));
        }
        numbers(&line[fields[2].clone()], lineno, "features")?;
        Ok(PhraseLine { line, fields })
    }

    /// The source phrase, without the spaces around it.
    pub fn source(&self) -> &'a str {
        self.line[self.fields[0].clone()].trim()
    }

    /// The target phrase, without the spaces around it.
    pub fn target(&self) -> &'a str {
        self.line[self.fields[1].clone()].trim()
    }

    /// The line with `value` appended to its features.
    pub fn with_feature(&self, value: &str) -> String {
        insert_in_field(self.line, &self.fields, 2, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of [`PhraseLine::with_feature`]: the line without its last feature (and the
    /// space before it, when there is one).
    fn without_last_feature(line: &str) -> String {
        let f = split_fields(line)[2].clone();
        let field = &line[f.clone()];
        let end = field.trim_end().len();
        let tok = field[..end].rfind(char::is_whitespace).map_or(0, |k| k + 1);
        // The value came with a space only when features preceded it.
        let cut = if field[..tok].trim().is_empty() { tok } else { tok - 1 };
        format!("{}{}", &line[..f.start + cut], &line[f.start + end..])
    }

    /// 3-, 4- and 5-field lines, spacing Moses never writes, Unicode, an empty feature field.
    const FIXTURE: &[&str] = &[
        "la casa ||| the house ||| 0.5 0.25 0.1 0.3",
        "la casa ||| the house ||| 0.5 0.25 0.1 0.3 ||| 0-0 1-1",
        "la casa ||| the house ||| 0.5 0.25 0.1 0.3 ||| 0-0 1-1 ||| 10 20 5",
        "  año   nuevo|||new   year|||0.2   0.1|||  0-0 1-1  |||3 4 2   ",
        "niño ||| 孩子 ||| 1e-05 -0.5 ||| ||| 1 1 1",
        "« ¿ qué ? » ||| \" what ? \" |||0.7\t0.2 |||",
        "x ||| y |||  ||| 0-0",
        "x ||| y |||",
        "el ||| the ||| 0.9 ||| 0-0 ||| 1 1 1 ||| {{extra}}",
    ];

    #[test]
    fn round_trip_is_byte_identical() {
        for (i, line) in FIXTURE.iter().enumerate() {
            let p = PhraseLine::parse(line, i + 1).unwrap();
            let out = p.with_feature("0.0123");
            assert_ne!(&out, line);
            assert_eq!(&without_last_feature(&out), line, "line {}: {out:?}", i + 1);
            // The new value is the last feature, and the line still parses with one more.
            let q = PhraseLine::parse(&out, i + 1).unwrap();
            let feats: Vec<&str> = out[q.fields[2].clone()].split_whitespace().collect();
            assert_eq!(feats.last(), Some(&"0.0123"));
            assert_eq!((q.source(), q.target()), (p.source(), p.target()));
        }
        assert_eq!(PhraseLine::parse(FIXTURE[3], 1).unwrap().source(), "año   nuevo");
        assert_eq!(PhraseLine::parse(FIXTURE[4], 1).unwrap().target(), "孩子");
    }

    #[test]
    fn malformed_lines_are_named() {
        let e = PhraseLine::parse("la casa ||| the house", 7).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.reason.contains("2 field"), "{}", e.reason);
        let e = PhraseLine::parse("a ||| b ||| 0.5 zero", 9).unwrap_err();
        assert!(e.reason.contains("`zero`"), "{}", e.reason);
        assert!(PhraseLine::parse("", 1).is_err());
    }
}
