//! The server's form and multipart bodies (issue 44): each request type under the form media
//! type in any letter case and with parameters, and under multipart (refused with a message),
//! then the same validation as JSON requests.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nmt::config::SearchConfig;
use nmt_serve::api::{check_count, check_sentences, parse_body, search_config, DetectRequest, FullRequest, LibreRequest, OneOrMany};

const TYPES: [&str; 5] = [
    "application/x-www-form-urlencoded",
    "Application/X-WWW-Form-Urlencoded; charset=UTF-8",
    "multipart/form-data; boundary=x",
    "MULTIPART/mixed",
    "application/x-www-form-urlencoded ;",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let ctype = TYPES[usize::from(pick) % TYPES.len()];
    let limits = nmt_serve::Limits::default();
    if let Ok(r) = parse_body::<LibreRequest>(ctype, body) {
        let texts = match r.q {
            OneOrMany::One(t) => vec![t],
            OneOrMany::Many(v) => v,
        };
        let _ = check_sentences(&texts, &limits, |t| t.split_whitespace().count());
        let n_best = r.alternatives.unwrap_or(0).checked_add(1);
        let _ = search_config(SearchConfig::default(), None, n_best, None, &limits);
    }
    if let Ok(r) = parse_body::<DetectRequest>(ctype, body) {
        let _ = check_count(if let OneOrMany::Many(v) = &r.q { v.len() } else { 1 }, &limits);
    }
    let _ = parse_body::<FullRequest>(ctype, body);
});
