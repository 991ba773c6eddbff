//! Moses n-best lists: `id ||| hypothesis ||| name= v … ||| total [||| alignment …]`, the
//! format `nmt translate --n-best` writes and Moses, Marian and Nematus read.
//!
//! Rescoring (Cho et al. 2014; Bahdanau et al.'s n-best experiments) adds a model's score as
//! one more named feature and, given its weight, moves the total by `weight × score` and
//! re-ranks each sentence's list. Everything else on the line is kept byte for byte.
use std::ops::Range;

use super::{insert_in_field, numbers, split_fields, LineError};

/// One n-best line.
#[derive(Clone, Debug, PartialEq)]
pub struct NbestLine {
    text: String,
    fields: Vec<Range<usize>>,
    /// The sentence it translates (0-based, as Moses counts).
    pub id: usize,
    /// The model score the list is ranked by.
    pub total: f64,
}

impl NbestLine {
    /// Parses line `lineno` (1-based, for errors): an id, a hypothesis, `name= values` features
    /// and a total.
    pub fn parse(line: &str, lineno: usize) -> Result<Self, LineError> {
        let fields = split_fields(line);
        if fields.len() < 4 {
            return Err(LineError::new(
                lineno,
                format!("an n-best line needs `id ||| hypothesis ||| features ||| total`, found {} field(s)", fields.len()),
            ));
        }
        let field = |k: usize| line[fields[k].clone()].trim();
        let id =
            field(0).parse::<usize>().map_err(|_| LineError::new(lineno, format!("the id `{}` is not a sentence number", field(0))))?;
        feature_list(field(2), lineno)?;
        let total = match numbers(field(3), lineno, "total")?.as_slice() {
            [t] => *t,
            _ => return Err(LineError::new(lineno, format!("the total `{}` is not one number", field(3)))),
        };
        Ok(NbestLine { text: line.to_string(), fields, id, total })
    }

    /// The hypothesis, without the spaces around it.
    pub fn hypothesis(&self) -> &str {
        self.text[self.fields[1].clone()].trim()
    }

    /// The features: `(name, values)` in line order (names without their `=`).
    pub fn features(&self) -> Vec<(String, Vec<f64>)> {
        // Checked by `parse`.
        feature_list(self.text[self.fields[2].clone()].trim(), 0).unwrap_or_default()
    }

    /// The line as text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Appends the feature `name= value`; with a weight, the total moves by `weight × value`
    /// and is rewritten in place (its spacing kept).
    pub fn add_feature(&mut self, name: &str, value: f64, weight: Option<f64>) {
        let mut text = insert_in_field(&self.text, &self.fields, 2, &format!("{name}= {value:.6}"));
        if let Some(w) = weight {
            self.total += w * value;
            let f = split_fields(&text)[3].clone();
            let field = &text[f.clone()];
            let lead = field.len() - field.trim_start().len();
            let end = field.trim_end().len();
            text.replace_range(f.start + lead..f.start + end, &format!("{:.6}", self.total));
        }
        self.fields = split_fields(&text);
        self.text = text;
    }
}

/// `name= v … name= v …` → `(name, values)`; a value before any name, a name without a
/// value or a bad number is an error.
fn feature_list(s: &str, lineno: usize) -> Result<Vec<(String, Vec<f64>)>, LineError> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    for tok in s.split_whitespace() {
        if let Some(name) = tok.strip_suffix('=') {
            out.push((name.to_string(), Vec::new()));
            continue;
        }
        let v = numbers(tok, lineno, "features")?[0];
        match out.last_mut() {
            Some((_, vals)) => vals.push(v),
            None => return Err(LineError::new(lineno, format!("features: the value `{tok}` has no `name=` before it"))),
        }
    }
    if let Some((name, _)) = out.iter().find(|(_, v)| v.is_empty()) {
        return Err(LineError::new(lineno, format!("features: `{name}=` has no value")));
    }
    Ok(out)
}

/// Re-ranks each sentence's list by total, best first; equal totals keep their order, and the
/// sentences keep the order in which they first appear.
pub fn sort_by_total(lines: &mut [NbestLine]) {
    let mut first: Vec<(usize, usize)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !first.iter().any(|&(id, _)| id == l.id) {
            first.push((l.id, i));
        }
    }
    let rank = |id: usize| first.iter().position(|&(x, _)| x == id).unwrap_or(usize::MAX);
    lines.sort_by(|a, b| rank(a.id).cmp(&rank(b.id)).then(b.total.total_cmp(&a.total)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_features() {
        let l = NbestLine::parse("3 ||| la  casa ||| lm= -1.5 tm= -0.5 -2 w= 1 ||| -4.25 ||| 0-0", 1).unwrap();
        assert_eq!((l.id, l.total, l.hypothesis()), (3, -4.25, "la  casa"));
        let want: Vec<(String, Vec<f64>)> = vec![("lm".into(), vec![-1.5]), ("tm".into(), vec![-0.5, -2.0]), ("w".into(), vec![1.0])];
        assert_eq!(l.features(), want);
    }

    #[test]
    fn adding_a_feature_moves_only_what_it_should() {
        let src = "0 ||| a b |||  lm= -1 ||| -2.5 ||| 0-0 1-1";
        let mut l = NbestLine::parse(src, 1).unwrap();
        l.add_feature("rnn", -3.0, None);
        assert_eq!(l.as_str(), "0 ||| a b |||  lm= -1 rnn= -3.000000 ||| -2.5 ||| 0-0 1-1");
        assert_eq!(l.total, -2.5);
        let mut l = NbestLine::parse(src, 1).unwrap();
        l.add_feature("rnn", -3.0, Some(0.5));
        assert_eq!(l.as_str(), "0 ||| a b |||  lm= -1 rnn= -3.000000 ||| -4.000000 ||| 0-0 1-1");
        assert_eq!(l.total, -4.0);
        assert_eq!(NbestLine::parse(l.as_str(), 1).unwrap(), l);
    }

    #[test]
    fn lists_are_reranked_per_sentence() {
        let lines = ["1 ||| x ||| f= 0 ||| -1", "1 ||| y ||| f= 0 ||| -2", "0 ||| z ||| f= 0 ||| -3", "0 ||| w ||| f= 0 ||| -1"];
        let mut l: Vec<NbestLine> = lines.iter().enumerate().map(|(i, s)| NbestLine::parse(s, i + 1).unwrap()).collect();
        // The new feature favours y and z.
        for (line, v) in l.iter_mut().zip([-5.0, 0.0, 0.0, -5.0]) {
            line.add_feature("m", v, Some(1.0));
        }
        sort_by_total(&mut l);
        let order: Vec<&str> = l.iter().map(|x| x.hypothesis()).collect();
        assert_eq!(order, ["y", "x", "z", "w"]);
    }

    #[test]
    fn malformed_lines_are_named() {
        for (line, want) in [
            ("0 ||| a ||| f= 1", "3 field"),
            ("x ||| a ||| f= 1 ||| 2", "`x`"),
            ("0 ||| a ||| f= one ||| 2", "`one`"),
            ("0 ||| a ||| 1 f= 2 ||| 2", "no `name=`"),
            ("0 ||| a ||| f= ||| 2", "`f=` has no value"),
            ("0 ||| a ||| f= 1 ||| 2 3", "not one number"),
        ] {
            let e = NbestLine::parse(line, 12).unwrap_err();
            assert_eq!(e.line, 12);
            assert!(e.reason.contains(want), "{line}: {}", e.reason);
        }
    }
}
