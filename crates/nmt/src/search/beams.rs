//! The beam bookkeeping of the search (Nematus/GroundHog semantics): a sentence's beam
//! shrinks by one each time a hypothesis ends with `</s>`; the sentence is done when its beam is
//! empty or its length limit is reached (the live hypotheses are then kept as unfinished, and a
//! limit of 0 gives one empty unfinished hypothesis); finished hypotheses are ranked by the
//! length-normalised score and the `n_best` first kept. With beam 1 this is greedy search.
//!
//! The beam loop (`beam.rs`) hands each step's chosen extensions to
//! [`Beams::advance`] and lays out its next rows from what it returns.
use nmt_data::EOS;

use super::hypothesis::{normalized, Hypothesis};

/// One live hypothesis of a sentence's beam.
#[derive(Clone, Debug)]
pub struct Live {
    pub tokens: Vec<u32>,
    pub log_prob: f64,
    pub alignment: Option<Vec<Vec<f32>>>,
}

/// An extension a step chose for a sentence: its parent (index in the sentence's live list),
/// the word, the new total `log p`, and the step's attention row (when recorded).
#[derive(Clone, Debug)]
pub struct Extension {
    pub parent: usize,
    pub word: u32,
    pub log_prob: f64,
    pub alpha: Option<Vec<f32>>,
}

/// The beams of a batch of sentences.
pub struct Beams {
    live: Vec<Vec<Live>>,
    width: Vec<usize>,
    finished: Vec<Vec<Hypothesis>>,
    limits: Vec<usize>,
    normalize: f64,
    k: usize,
}

impl Beams {
    /// Beams of width `k` for sentences with output length limits `limits`; `alignments`:
    /// record attention rows; `normalize`: the length-normalisation exponent α.
    pub fn new(limits: &[usize], k: usize, alignments: bool, normalize: f64) -> Self {
        let k = k.max(1);
        let mut beams = Beams {
            live: limits.iter().map(|_| vec![Live { tokens: Vec::new(), log_prob: 0.0, alignment: alignments.then(Vec::new) }]).collect(),
            width: vec![k; limits.len()],
            finished: vec![Vec::new(); limits.len()],
            limits: limits.to_vec(),
            normalize,
            k,
        };
        for (b, _) in limits.iter().enumerate().filter(|(_, &l)| l == 0) {
            beams.cut(b);
        }
        beams
    }

    /// Sentence `b`'s live hypotheses; row `j` of its step is `live(b)[j]`.
    pub fn live(&self, b: usize) -> &[Live] {
        &self.live[b]
    }

    /// How many extensions sentence `b` needs this step (0 when it is done).
    pub fn width(&self, b: usize) -> usize {
        if self.live[b].is_empty() {
            0
        } else {
            self.width[b]
        }
    }

    /// Applies sentence `b`'s extensions at step `t` (best first): those ending in `</s>`
    /// finish and narrow the beam; the others become the new live list, unless the length limit
    /// is reached, when they are kept as unfinished. Returns the survivors `(parent, word)` in
    /// the order of the new live list, for the caller to gather their decoder states.
    pub fn advance(&mut self, b: usize, t: usize, exts: Vec<Extension>) -> Vec<(usize, u32)> {
        let mut next = Vec::with_capacity(exts.len());
        let mut survivors = Vec::with_capacity(exts.len());
        for e in exts {
            let parent = &self.live[b][e.parent];
            let mut alignment = parent.alignment.clone();
            if let (Some(al), Some(a)) = (alignment.as_mut(), e.alpha) {
                al.push(a);
            }
            let mut tokens = parent.tokens.clone();
            if e.word == EOS {
                let h = self.hypothesis(Live { tokens, log_prob: e.log_prob, alignment }, true);
                self.finished[b].push(h);
                self.width[b] = self.width[b].saturating_sub(1);
            } else {
                tokens.push(e.word);
                next.push(Live { tokens, log_prob: e.log_prob, alignment });
                survivors.push((e.parent, e.word));
            }
        }
        self.live[b] = next;
        if t + 1 >= self.limits[b] {
            self.cut(b);
            survivors.clear();
        }
        survivors
    }

    /// Ends sentence `b`: its live hypotheses become unfinished results.
    fn cut(&mut self, b: usize) {
        let live = std::mem::take(&mut self.live[b]);
        let hyps: Vec<Hypothesis> = live.into_iter().map(|l| self.hypothesis(l, false)).collect();
        self.finished[b].extend(hyps);
    }

    fn hypothesis(&self, l: Live, done: bool) -> Hypothesis {
        let len = l.tokens.len() + usize::from(done);
        Hypothesis {
            score: normalized(l.log_prob, len, self.normalize),
            tokens: l.tokens,
            log_prob: l.log_prob,
            finished: done,
            alignment: l.alignment,
        }
    }

    /// Per sentence, up to `n_best` hypotheses (at most the beam width), best first; sentences
    /// still live (the step loop stopped early) count their live hypotheses as unfinished.
    pub fn finish(mut self, n_best: usize) -> Vec<Vec<Hypothesis>> {
        for b in 0..self.live.len() {
            self.cut(b);
        }
        let keep = n_best.clamp(1, self.k);
        self.finished
            .into_iter()
            .map(|mut f| {
                f.sort_by(|a, b| b.score.total_cmp(&a.score));
                f.truncate(keep);
                f
            })
            .collect()
    }
}
