//! BLEU tokenizers, mirroring sacreBLEU 2.6.0's `sacrebleu/tokenizers/`:
//!
//! * `13a`, [`Tokenize::Tok13a`]: `tokenizer_13a.Tokenizer13a` (mteval-v13a.pl) followed by
//!   `tokenizer_re.TokenizerRegexp`; reimplemented as byte scans that reproduce the
//!   leftmost, non-overlapping substitution of Python's `re.sub` for each pattern.
//! * `intl`, [`Tokenize::Intl`]: `tokenizer_intl.TokenizerV14International` (mteval-v14.pl
//!   `--international-tokenization`), with the same Unicode-property regexes.
//! * `none`, [`Tokenize::None`]: `tokenizer_none.NoneTokenizer`.
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use regex::Regex;

use crate::error::{Error, Result};
use crate::text::py_normalize_spaces;

/// Which tokenizer BLEU applies before counting n-grams (sacreBLEU's `--tokenize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Tokenize {
    /// No tokenization: split on whitespace only (`none`).
    None,
    /// mteval-v13a tokenization, sacreBLEU's default (`13a`).
    #[default]
    Tok13a,
    /// mteval-v14 international tokenization on Unicode punctuation and symbols (`intl`).
    Intl,
}

impl Tokenize {
    /// The name used in signatures and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Tokenize::None => "none",
            Tokenize::Tok13a => "13a",
            Tokenize::Intl => "intl",
        }
    }

    /// Tokenize one line; the result has single spaces between tokens.
    pub fn apply(self, line: &str) -> String {
        match self {
            Tokenize::None => line.to_string(),
            Tokenize::Tok13a => tokenize_13a(line),
            Tokenize::Intl => tokenize_intl(line),
        }
    }
}

impl fmt::Display for Tokenize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenize {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Tokenize::None),
            "13a" => Ok(Tokenize::Tok13a),
            "intl" => Ok(Tokenize::Intl),
            other => Err(Error::UnknownTokenizer(other.to_string())),
        }
    }
}

/// `[\{-\~\[-\` -\&\(-\+\:-\@\/]`: ASCII punctuation except `'`, `,`, `-`, `.` (and space).
const PUNCT_13A: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = matches!(i as u8, b'{'..=b'~' | b'['..=b'`' | b' '..=b'&' | b'('..=b'+' | b':'..=b'@' | b'/');
        i += 1;
    }
    t
};

#[inline(always)]
fn is_period_comma(b: u8) -> bool {
    b == b'.' || b == b','
}

/// `re.sub(r'(X)(Y)', repl, s)` for single-byte classes X and Y, where `trigger_second`
/// says whether occurrences are located by Y (else by X). Copies untouched runs in bulk.
/// `sep_first` puts a space before X (`' \1 \2'`), otherwise the result is `'\1 \2 '`.
#[inline(always)]
fn sub_pairs(a: &[u8], out: &mut Vec<u8>, x: impl Fn(u8) -> bool, y: impl Fn(u8) -> bool, trigger_second: bool) {
    out.clear();
    out.reserve(a.len() + a.len() / 4 + 8);
    let mut copied = 0; // a[..copied] already written
    let mut next_free = 0; // first index a new match may start at
    for (j, &b) in a.iter().enumerate() {
        let i = if trigger_second {
            if !y(b) || j == 0 {
                continue;
            }
            j - 1
        } else {
            if !x(b) {
                continue;
            }
            j
        };
        if i < next_free || i + 1 >= a.len() || !x(a[i]) || !y(a[i + 1]) {
            continue;
        }
        out.extend_from_slice(&a[copied..i]);
        if trigger_second {
            out.extend_from_slice(&[a[i], b' ', a[i + 1], b' ']);
        } else {
            out.extend_from_slice(&[b' ', a[i], b' ', a[i + 1]]);
        }
        copied = i + 2;
        next_free = i + 2;
    }
    out.extend_from_slice(&a[copied..]);
}

/// sacreBLEU's `Tokenizer13a.__call__` + `TokenizerRegexp.__call__`.
///
/// Working on UTF-8 bytes is equivalent to working on characters here: every
/// pattern character is ASCII, and the only "any character" classes are
/// `[^0-9]`, which a continuation byte also satisfies without changing where
/// the next match may start.
pub fn tokenize_13a(line: &str) -> String {
    // language-independent part
    let mut s = std::borrow::Cow::Borrowed(line);
    if s.contains('<') && s.contains("<skipped>") {
        s = s.replace("<skipped>", "").into();
    }
    if s.contains('\n') {
        s = s.replace("-\n", "").replace('\n', " ").into();
    }
    if s.contains('&') {
        s = s.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").into();
    }
    let src = s.as_bytes();

    // (1) ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 ', on f' {line} '
    // (the wrapping spaces are themselves in the class, hence three on each side)
    let mut a = Vec::with_capacity(src.len() + src.len() / 2 + 8);
    a.extend_from_slice(b"   ");
    let mut copied = 0;
    for (i, &b) in src.iter().enumerate() {
        if PUNCT_13A[usize::from(b)] {
            a.extend_from_slice(&src[copied..i]);
            a.extend_from_slice(&[b' ', b, b' ']);
            copied = i + 1;
        }
    }
    a.extend_from_slice(&src[copied..]);
    a.extend_from_slice(b"   ");

    let non_digit = |b: u8| !b.is_ascii_digit();
    let digit = |b: u8| b.is_ascii_digit();
    let mut b = Vec::new();
    // (2) ([^0-9])([\.,]) -> '\1 \2 '
    sub_pairs(&a, &mut b, non_digit, is_period_comma, true);
    // (3) ([\.,])([^0-9]) -> ' \1 \2'
    sub_pairs(&b, &mut a, is_period_comma, non_digit, false);
    // (4) ([0-9])(-) -> '\1 \2 '
    sub_pairs(&a, &mut b, digit, |c| c == b'-', true);

    // Only ASCII spaces were inserted, at character boundaries: still UTF-8.
    match std::str::from_utf8(&b) {
        Ok(s) => py_normalize_spaces(s),
        Err(_) => py_normalize_spaces(&String::from_utf8_lossy(&b)),
    }
}

struct IntlRegexes {
    punct_after_non_digit: Regex,
    punct_before_non_digit: Regex,
    symbol: Regex,
}

fn intl_regexes() -> Option<&'static IntlRegexes> {
    static RES: OnceLock<Option<IntlRegexes>> = OnceLock::new();
    RES.get_or_init(|| {
        Some(IntlRegexes {
            punct_after_non_digit: Regex::new(r"(\P{N})(\p{P})").ok()?,
            punct_before_non_digit: Regex::new(r"(\p{P})(\P{N})").ok()?,
            symbol: Regex::new(r"(\p{S})").ok()?,
        })
    })
    .as_ref()
}

/// sacreBLEU's `TokenizerV14International.__call__`.
pub fn tokenize_intl(line: &str) -> String {
    let Some(re) = intl_regexes() else {
        // The patterns are constants known to compile; fall back to whitespace splitting.
        return py_normalize_spaces(line);
    };
    let s = re.punct_after_non_digit.replace_all(line, "${1} ${2} ");
    let s = re.punct_before_non_digit.replace_all(&s, " ${1} ${2}");
    let s = re.symbol.replace_all(&s, " ${1} ");
    py_normalize_spaces(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirteen_a_basics() {
        assert_eq!(tokenize_13a("Hello, world!"), "Hello , world !");
        assert_eq!(tokenize_13a("1,000.5 and 3-4."), "1,000.5 and 3 - 4 .");
        assert_eq!(tokenize_13a("&quot;x&quot; &amp;lt;"), "\" x \" <");
        assert_eq!(tokenize_13a(""), "");
    }

    #[test]
    fn names_round_trip() {
        for t in [Tokenize::None, Tokenize::Tok13a, Tokenize::Intl] {
            assert_eq!(t.name().parse::<Tokenize>().ok(), Some(t));
        }
        assert!("zh".parse::<Tokenize>().is_err());
    }
}
