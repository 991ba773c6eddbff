//! The server's request bodies, as JSON and as forms, and their validation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nmt::config::SearchConfig;
use nmt_serve::api::{check_sentences, parse_body, search_config, FullRequest, LibreRequest};

fuzz_target!(|data: &[u8]| {
    let limits = nmt_serve::Limits::default();
    for ctype in ["application/json", "application/x-www-form-urlencoded"] {
        if let Ok(r) = parse_body::<FullRequest>(ctype, data) {
            let _ = check_sentences(&r.text, &limits, |t| t.split_whitespace().count());
            let _ = search_config(SearchConfig::default(), r.beam_size, r.n_best, r.normalize, &limits);
        }
        let _ = parse_body::<LibreRequest>(ctype, data);
    }
});
