//! Python `str` semantics that sacreBLEU relies on: `str.isspace`, `str.split()`,
//! `str.rstrip()` and `' '.join(s.split())`.
//!
//! Python's whitespace is Rust's `char::is_whitespace` plus the ASCII
//! separators U+001C..U+001F (which Python treats as line/segment breaks).
//! Splitting works on UTF-8 bytes with a fast path for ASCII.

/// Python's `str.isspace` for one character.
#[inline]
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// ASCII bytes that are Python whitespace: `\t \n \v \f \r`, U+001C..U+001F, space.
const ASCII_SPACE: [bool; 128] = {
    let mut t = [false; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = matches!(i as u8, b'\t'..=b'\r' | 0x1c..=0x20);
        i += 1;
    }
    t
};

/// Byte length of the Python whitespace character starting at `b[i]`, or 0.
#[inline(always)]
fn space_len(b: &[u8], i: usize) -> usize {
    let x = b[i];
    if x < 0x80 {
        return usize::from(ASCII_SPACE[usize::from(x)]);
    }
    // Non-ASCII whitespace starts with C2, E1, E2 or E3 (U+0085 .. U+3000).
    if !matches!(x, 0xc2 | 0xe1 | 0xe2 | 0xe3) {
        return 0;
    }
    non_ascii_space_len(b, i)
}

#[cold]
#[inline(never)]
fn non_ascii_space_len(b: &[u8], i: usize) -> usize {
    let end = (i + 3).min(b.len());
    match std::str::from_utf8(&b[i..end]).or_else(|e| std::str::from_utf8(&b[i..i + e.valid_up_to()])) {
        Ok(s) => s.chars().next().filter(|&c| is_py_space(c)).map_or(0, char::len_utf8),
        Err(_) => 0,
    }
}

/// Iterator of Python's `s.split()` pieces.
pub struct PySplit<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Iterator for PySplit<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        let mut i = self.pos;
        loop {
            if i >= b.len() {
                self.pos = i;
                return None;
            }
            let n = space_len(b, i);
            if n == 0 {
                break;
            }
            i += n;
        }
        let start = i;
        while i < b.len() && space_len(b, i) == 0 {
            i += 1;
        }
        self.pos = i;
        // Both ends are character boundaries (ASCII or the start of a whitespace char).
        self.s.get(start..i)
    }
}

/// Python's `s.split()` (no argument): split on runs of whitespace, no empty pieces.
pub fn py_split(s: &str) -> PySplit<'_> {
    PySplit { s, pos: 0 }
}

/// Python's `s.rstrip()` (no argument).
pub fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// Python's `' '.join(s.split())`.
pub fn py_normalize_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in py_split(s) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Python's `''.join(s.split())`: all whitespace removed.
pub fn py_remove_spaces(s: &str) -> String {
    s.chars().filter(|&c| !is_py_space(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace() {
        assert!(is_py_space('\u{1c}') && is_py_space('\u{a0}') && is_py_space('\u{3000}'));
        assert!(!is_py_space('\u{200b}'));
        assert_eq!(py_split(" a\u{1d}b  c ").collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(py_split("x\u{a0}é\u{3000}\u{2009}ü\u{85}").collect::<Vec<_>>(), ["x", "é", "ü"]);
        assert_eq!(py_split("\u{200b}€").collect::<Vec<_>>(), ["\u{200b}€"]);
        assert_eq!(py_rstrip("a b \t\u{1f}"), "a b");
        assert_eq!(py_normalize_spaces("  a \t b "), "a b");
        assert_eq!(py_remove_spaces(" a b\tc "), "abc");
    }

    #[test]
    fn split_agrees_with_char_split_on_all_whitespace() {
        for c in (0u32..0x3100).filter_map(char::from_u32) {
            let s = format!("a{c}b");
            let want: Vec<&str> = s.split(is_py_space).filter(|w| !w.is_empty()).collect();
            assert_eq!(py_split(&s).collect::<Vec<_>>(), want, "U+{:04X}", c as u32);
        }
    }
}
