//! Arbitrary request bodies never panic the server's parsing and validation (the HTTP path
//! around them is tested in `api.rs`).
use nmt::config::SearchConfig;
use nmt_serve::api::{check_count, check_sentences, parse_body, search_config, DetectRequest, FullRequest, LibreRequest, OneOrMany};
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

    /// Issue 44: forms under any letter case of their media type, and multipart bodies.
    #[test]
    fn form_and_multipart_bodies(
        body in "(\\PC|=|&|%|\\+|-|\r|\n|q|source|target|alternatives|api_key|[0-9]){0,160}",
        ctype in prop_oneof![
            Just("Application/X-WWW-Form-Urlencoded; charset=UTF-8"),
            Just("multipart/form-data; boundary=x"),
            Just("MULTIPART/MIXED"),
        ],
    ) {
        let limits = Limits::default();
        if let Ok(r) = parse_body::<LibreRequest>(ctype, body.as_bytes()) {
            let n_best = r.alternatives.unwrap_or(0).checked_add(1);
            let _ = search_config(SearchConfig::default(), None, n_best, None, &limits);
        }
        if let Ok(r) = parse_body::<DetectRequest>(ctype, body.as_bytes()) {
            let _ = check_count(if let OneOrMany::Many(v) = &r.q { v.len() } else { 1 }, &limits);
        }
        prop_assert!(!ctype.starts_with('m') && !ctype.starts_with('M') || parse_body::<FullRequest>(ctype, body.as_bytes()).is_err());
    }
}
