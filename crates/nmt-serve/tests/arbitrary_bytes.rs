//! Arbitrary request bodies never panic the server's parsing and validation (the HTTP path
//! around them is tested in `api.rs`).
use nmt::config::SearchConfig;
use nmt_serve::api::{check_sentences, parse_body, search_config, FullRequest, LibreRequest};
use nmt_serve::Limits;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn request_bodies(body in "(\\PC|\\{|\\}|\\[|\\]|\"|:|,|=|&|[0-9]|text|q|beam_size|n_best|normalize){0,160}", form in any::<bool>()) {
        let ctype = if form { "application/x-www-form-urlencoded" } else { "application/json" };
        let limits = Limits::default();
        if let Ok(r) = parse_body::<FullRequest>(ctype, body.as_bytes()) {
            let _ = check_sentences(&r.text, &limits, |t| t.split_whitespace().count());
            let _ = search_config(SearchConfig::default(), r.beam_size, r.n_best, r.normalize, &limits);
        }
        let _ = parse_body::<LibreRequest>(ctype, body.as_bytes());
    }
}
