//! The deep output's keys: which decoder state it reads (`model.output_state`) and its hidden
//! layer's activation (`model.output_layer`). `model/output.rs` is the layer.
use serde::{Deserialize, Serialize};

/// Which decoder state feeds the deep output at step `i`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OutputState {
    /// `s_{i-1}`, as RNNsearch appendix A writes `t~_i = U_o s_{i-1} + …`.
    Previous,
    /// `s_i` (RNNenc's `O_h h'_t`; also GroundHog's and most toolkits' choice).
    Current,
}

/// The deep output's hidden layer `t (l)` (the `model.output_layer` key), read by the softmax.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OutputLayer {
    /// The papers' maxout over pairs of a `2l`-wide pre-activation (RNNenc appendix A,
    /// RNNsearch appendix A.2.2): `t_k = max(t~_{2k-1}, t~_{2k})`.
    #[default]
    Maxout,
    /// `t = tanh(O_h s + O_y E y + O_c c + b)`, `l` wide: Nematus' and Marian's `ff_logit_l1`
    /// (Sennrich et al. 2017), the output layer of Marian's `s2s` and `amun` models.
    Tanh,
}

impl OutputLayer {
    /// For `skip_serializing_if`: the papers' layer is not written, so a model file stays
    /// readable by builds from before the key existed.
    pub fn is_maxout(&self) -> bool {
        *self == OutputLayer::Maxout
    }

    /// The pre-activation's width for `l` output units: `2l` for maxout's pairs, `l` for tanh.
    pub fn pre_width(&self, units: usize) -> usize {
        match self {
            OutputLayer::Maxout => 2 * units,
            OutputLayer::Tanh => units,
        }
    }
}
