//! BLEU's options, statistics and score: sacreBLEU 2.6.0's `BLEU.compute_bleu`, `BLEUScore`
//! and `BLEUSignature`, with the same floating-point operations in the same order as Python.
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::format::{json_compact, json_fields, json_pretty, signature, text_line};
use crate::text::py_rstrip;
use crate::tokenize::Tokenize;

/// BLEU's maximum n-gram order (sacreBLEU's `MAX_NGRAM_ORDER`).
pub const MAX_NGRAM_ORDER: usize = 4;

/// Smoothing of zero n-gram precisions (sacreBLEU's `smooth_method` / `smooth_value`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Smooth {
    /// No smoothing.
    None,
    /// Method 1: zero precisions become `smooth_value / total` (sacreBLEU default 0.1).
    Floor(f64),
    /// Method 2: add `k` to counts and totals of orders > 1 (sacreBLEU default 1).
    AddK(f64),
    /// Method 3, NIST / mteval-v13a exponential smoothing (sacreBLEU's default).
    #[default]
    Exp,
}

impl Smooth {
    /// The `smooth:` value of the signature, e.g. `exp` or `floor[0.10]`.
    pub fn signature_value(&self) -> String {
        match self {
            Smooth::None => "none".to_string(),
            Smooth::Exp => "exp".to_string(),
            Smooth::Floor(v) => format!("floor[{v:.2}]"),
            Smooth::AddK(v) => format!("add-k[{v:.2}]"),
        }
    }
}

impl FromStr for Smooth {
    type Err = Error;
    /// `none`, `exp`, `floor`, `add-k` (with sacreBLEU's default values).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Smooth::None),
            "exp" => Ok(Smooth::Exp),
            "floor" => Ok(Smooth::Floor(0.1)),
            "add-k" => Ok(Smooth::AddK(1.0)),
            other => Err(Error::InvalidArgument(format!("unknown smoothing method {other:?} (expected none, floor, add-k or exp)"))),
        }
    }
}

/// Options of BLEU (sacreBLEU's `BLEU(...)` arguments); `Default` is sacreBLEU's default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BleuOptions {
    /// Lowercase hypotheses and references before tokenizing (`-lc`).
    pub lowercase: bool,
    /// Tokenizer (`--tokenize`), default 13a.
    pub tokenize: Tokenize,
    /// Smoothing method, default `exp`.
    pub smooth: Smooth,
    /// Average only over n-gram orders the hypothesis has (sacreBLEU's `effective_order`).
    /// Off for corpus BLEU by default; [`sentence_bleu`] always turns it on.
    pub effective_order: bool,
}

impl BleuOptions {
    /// Lowercasing, right-stripping and tokenizing one segment (`BLEU._preprocess_segment`).
    pub fn preprocess(&self, sent: &str) -> String {
        if self.lowercase {
            let lower = sent.to_lowercase();
            self.tokenize.apply(py_rstrip(&lower))
        } else {
            self.tokenize.apply(py_rstrip(sent))
        }
    }
}

/// BLEU's sufficient statistics for one segment or a whole corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BleuStats {
    /// Hypothesis length in tokens.
    pub sys_len: u64,
    /// Closest reference length in tokens.
    pub ref_len: u64,
    /// Clipped n-gram matches per order 1..=4.
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order 1..=4.
    pub totals: [u64; MAX_NGRAM_ORDER],
}

impl std::ops::AddAssign for BleuStats {
    fn add_assign(&mut self, o: Self) {
        self.sys_len += o.sys_len;
        self.ref_len += o.ref_len;
        for n in 0..MAX_NGRAM_ORDER {
            self.counts[n] += o.counts[n];
            self.totals[n] += o.totals[n];
        }
    }
}

impl std::iter::Sum for BleuStats {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        let mut acc = BleuStats::default();
        for s in iter {
            acc += s;
        }
        acc
    }
}

/// A BLEU score with its statistics and what its signature needs.
#[derive(Debug, Clone, PartialEq)]
pub struct BleuScore {
    /// BLEU in 0..=100.
    pub score: f64,
    /// Clipped n-gram matches per order.
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order.
    pub totals: [u64; MAX_NGRAM_ORDER],
    /// n-gram precisions in percent (smoothed as sacreBLEU does).
    pub precisions: [f64; MAX_NGRAM_ORDER],
    /// Brevity penalty.
    pub bp: f64,
    /// `sys_len / ref_len` (0 when `ref_len` is 0).
    pub ratio: f64,
    /// Hypothesis length.
    pub sys_len: u64,
    /// Reference length.
    pub ref_len: u64,
    /// Number of reference streams (signature `nrefs`).
    pub nrefs: usize,
    /// The options it was computed with (signature `case`, `eff`, `tok`, `smooth`).
    pub options: BleuOptions,
}

impl BleuScore {
    /// `BLEU.compute_bleu` from aggregated statistics.
    pub fn from_stats(stats: &BleuStats, opts: &BleuOptions, nrefs: usize) -> BleuScore {
        let (sys_len, ref_len) = (stats.sys_len, stats.ref_len);
        let mut bp = 1.0;
        if sys_len < ref_len {
            bp = if sys_len > 0 { (1.0 - ref_len as f64 / sys_len as f64).exp() } else { 0.0 };
        }
        let ratio = if ref_len > 0 { sys_len as f64 / ref_len as f64 } else { 0.0 };
        let mut precisions = [0.0f64; MAX_NGRAM_ORDER];
        let make = |score: f64, precisions: [f64; MAX_NGRAM_ORDER]| BleuScore {
            score,
            counts: stats.counts,
            totals: stats.totals,
            precisions,
            bp,
            ratio,
            sys_len,
            ref_len,
            nrefs,
            options: *opts,
        };
        // Early stop if there are no matches (sacreBLEU #141).
        if stats.counts.iter().all(|&c| c == 0) {
            return make(0.0, precisions);
        }
        let mut correct = stats.counts.map(|c| c as f64);
        let mut total = stats.totals.map(|t| t as f64);
        let mut smooth_mteval = 1.0f64;
        let mut eff_order = MAX_NGRAM_ORDER;
        for n in 1..=MAX_NGRAM_ORDER {
            if let Smooth::AddK(k) = opts.smooth {
                if n > 1 {
                    correct[n - 1] += k;
                    total[n - 1] += k;
                }
            }
            if total[n - 1] == 0.0 {
                break;
            }
            if opts.effective_order {
                eff_order = n;
            }
            if correct[n - 1] == 0.0 {
                match opts.smooth {
                    Smooth::Exp => {
                        smooth_mteval *= 2.0;
                        precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1]);
                    }
                    Smooth::Floor(v) => precisions[n - 1] = 100.0 * v / total[n - 1],
                    Smooth::None | Smooth::AddK(_) => {}
                }
            } else {
                precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1];
            }
        }
        let log_sum: f64 = precisions[..eff_order].iter().fold(0.0, |acc, &p| acc + my_log(p));
        let score = bp * (log_sum / eff_order as f64).exp();
        make(score, precisions)
    }

    /// sacreBLEU's signature, e.g. `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`.
    pub fn signature(&self) -> String {
        let o = &self.options;
        signature(&[
            ("nrefs", self.nrefs.to_string()),
            ("case", if o.lowercase { "lc" } else { "mixed" }.to_string()),
            ("eff", if o.effective_order { "yes" } else { "no" }.to_string()),
            ("tok", o.tokenize.name().to_string()),
            ("smooth", o.smooth.signature_value()),
        ])
    }

    /// The verbose part: `60.0/35.1/22.0/14.0 (BP = 1.000 ratio = 1.012 hyp_len = 123 ref_len = 121)`.
    pub fn verbose(&self) -> String {
        let prec: Vec<String> = self.precisions.iter().map(|p| format!("{p:.1}")).collect();
        format!("{} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})", prec.join("/"), self.bp, self.ratio, self.sys_len, self.ref_len)
    }

    /// `Score.format(width, signature=...)`: `BLEU|<signature> = 30.12 <verbose>`,
    /// or `BLEU = 30.12 <verbose>` without the signature.
    pub fn format(&self, width: usize, with_signature: bool) -> String {
        let sig = with_signature.then(|| self.signature());
        text_line("BLEU", self.score, width, &self.verbose(), sig.as_deref())
    }

    /// sacreBLEU's `--format json` object (indent 1), score rounded to `width` decimals.
    pub fn to_json(&self, width: usize) -> String {
        json_pretty(&json_fields("BLEU", self.score, width, &self.verbose(), &self.signature()))
    }

    /// The same JSON object on a single line.
    pub fn to_json_line(&self, width: usize) -> String {
        json_compact(&json_fields("BLEU", self.score, width, &self.verbose(), &self.signature()))
    }
}

impl fmt::Display for BleuScore {
    /// `BLEU = 30.12 60.0/35.1/22.0/14.0 (BP = 1.000 ratio = 1.012 hyp_len = 123 ref_len = 121)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(2, false))
    }
}

/// `utils.my_log`: log floored for zero.
fn my_log(x: f64) -> f64 {
    if x == 0.0 {
        -9_999_999_999.0
    } else {
        x.ln()
    }
}
