//! Marian's `--type amun` (the Nematus architecture as Marian trains it): the `s2s` network
//! under Nematus' parameter names. Marian itself loads such a file by renaming its arrays to
//! the `s2s` names (`src/models/amun.h`, `Amun::load`: the same table), dropping the dummy
//! arrays `decoder_c_tt`, `uidx` and `history_errs`, and reading one-dimensional biases as
//! `(1, n)`; then the `s2s` encoder and decoder run. The conversion does the same and goes on
//! as for `s2s` (`marian_weights.rs`).
use std::collections::BTreeMap;

use super::npz::Array;

/// Nematus' (`amun`) name → Marian's `s2s` name (`Amun::load`'s `nameMap`).
const NAMES: [(&str, &str); 46] = [
    ("decoder_U", "decoder_cell1_U"),
    ("decoder_Ux", "decoder_cell1_Ux"),
    ("decoder_W", "decoder_cell1_W"),
    ("decoder_Wx", "decoder_cell1_Wx"),
    ("decoder_b", "decoder_cell1_b"),
    ("decoder_bx", "decoder_cell1_bx"),
    ("decoder_cell1_gamma1", "decoder_cell1_gamma1"),
    ("decoder_cell1_gamma2", "decoder_cell1_gamma2"),
    ("decoder_U_nl", "decoder_cell2_U"),
    ("decoder_Ux_nl", "decoder_cell2_Ux"),
    ("decoder_Wc", "decoder_cell2_W"),
    ("decoder_Wcx", "decoder_cell2_Wx"),
    ("decoder_b_nl", "decoder_cell2_b"),
    ("decoder_bx_nl", "decoder_cell2_bx"),
    ("ff_logit_prev_W", "decoder_ff_logit_l1_W0"),
    ("ff_logit_lstm_W", "decoder_ff_logit_l1_W1"),
    ("ff_logit_ctx_W", "decoder_ff_logit_l1_W2"),
    ("ff_logit_prev_b", "decoder_ff_logit_l1_b0"),
    ("ff_logit_lstm_b", "decoder_ff_logit_l1_b1"),
    ("ff_logit_ctx_b", "decoder_ff_logit_l1_b2"),
    ("ff_logit_l1_gamma0", "decoder_ff_logit_l1_gamma0"),
    ("ff_logit_l1_gamma1", "decoder_ff_logit_l1_gamma1"),
    ("ff_logit_l1_gamma2", "decoder_ff_logit_l1_gamma2"),
    ("ff_logit_W", "decoder_ff_logit_l2_W"),
    ("ff_logit_b", "decoder_ff_logit_l2_b"),
    ("ff_state_W", "decoder_ff_state_W"),
    ("ff_state_b", "decoder_ff_state_b"),
    ("ff_state_gamma", "decoder_ff_state_gamma"),
    ("Wemb_dec", "decoder_Wemb"),
    ("Wemb", "encoder_Wemb"),
    ("encoder_U", "encoder_bi_U"),
    ("encoder_Ux", "encoder_bi_Ux"),
    ("encoder_W", "encoder_bi_W"),
    ("encoder_Wx", "encoder_bi_Wx"),
    ("encoder_b", "encoder_bi_b"),
    ("encoder_bx", "encoder_bi_bx"),
    ("encoder_gamma1", "encoder_bi_gamma1"),
    ("encoder_gamma2", "encoder_bi_gamma2"),
    ("encoder_r_U", "encoder_bi_r_U"),
    ("encoder_r_Ux", "encoder_bi_r_Ux"),
    ("encoder_r_W", "encoder_bi_r_W"),
    ("encoder_r_Wx", "encoder_bi_r_Wx"),
    ("encoder_r_b", "encoder_bi_r_b"),
    ("encoder_r_bx", "encoder_bi_r_bx"),
    ("encoder_r_gamma1", "encoder_bi_r_gamma1"),
    ("encoder_r_gamma2", "encoder_bi_r_gamma2"),
];

/// The arrays that are bookkeeping, not weights.
const DUMMIES: [&str; 3] = ["decoder_c_tt", "uidx", "history_errs"];

/// An `amun` archive's arrays under their `s2s` names, as `Amun::load` reads them.
pub fn to_s2s_names(arrays: BTreeMap<String, Array>) -> BTreeMap<String, Array> {
    let names: BTreeMap<&str, &str> = NAMES.into_iter().collect();
    arrays
        .into_iter()
        .filter(|(k, _)| !DUMMIES.contains(&k.as_str()))
        .map(|(k, mut a)| {
            if let [n] = a.shape[..] {
                a.shape = vec![1, n];
            }
            (names.get(k.as_str()).map_or(k, |s| s.to_string()), a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amun_names_become_s2s_names_and_dummies_go() {
        let a = |shape: &[usize]| Array { shape: shape.to_vec(), data: vec![0.0; shape.iter().product()] };
        let arrays: BTreeMap<String, Array> =
            [("decoder_Wc", a(&[4, 6])), ("ff_logit_b", a(&[5])), ("decoder_c_tt", a(&[1, 0])), ("decoder_W_comb_att", a(&[2, 4]))]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        let out = to_s2s_names(arrays);
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(keys, ["decoder_W_comb_att", "decoder_cell2_W", "decoder_ff_logit_l2_b"]);
        assert_eq!(out["decoder_ff_logit_l2_b"].shape, [1, 5]);
    }
}
