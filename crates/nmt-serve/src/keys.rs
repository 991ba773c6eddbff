//! API keys, as LibreTranslate has them: `nmt serve --api-keys FILE`, one key per line, each
//! optionally followed by its limit in requests per minute and then in source tokens per minute
//! (`KEY 60`, `KEY 60 20000`; none = unlimited). Blank lines and lines starting with `#` are
//! skipped.
//!
//! With keys configured, a translation or detection request must carry a known `api_key`
//! (403 otherwise, LibreTranslate's `{"error": …}` shape), and a key over a limit gets 429 with
//! `Retry-After`: the seconds until enough of its last minute's use leaves the window. A request
//! is checked when it arrives ([`ApiKeys::authorize`]) but charged only once it is valid
//! ([`ApiKeys::charge`], with its token count): a rejected request costs nothing (issue 44,
//! row 14).
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{ApiError, ServeError};

/// The window a per-minute limit counts over.
const WINDOW: Duration = Duration::from_secs(60);

/// A key's limits per minute (`None`: unlimited).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Quota {
    requests: Option<usize>,
    tokens: Option<usize>,
}

/// The configured keys and their recent requests (when, and how many tokens).
pub struct ApiKeys {
    limits: HashMap<String, Quota>,
    recent: Mutex<HashMap<String, VecDeque<(Instant, usize)>>>,
}

impl ApiKeys {
    /// Parses a key file's text; `what` names it in errors.
    ///
    /// # Errors
    /// [`ServeError::Setup`] naming the line of a malformed entry, a repeated key, or a file
    /// without keys.
    pub fn parse(text: &str, what: &str) -> Result<Self, ServeError> {
        let mut limits = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason: &str| ServeError::Setup(format!("{what}, line {}: {reason}", i + 1));
            let mut fields = line.split_whitespace();
            let key = fields.next().unwrap_or_default().to_owned();
            let mut limit = |what: &str| match fields.next() {
                None => Ok(None),
                Some(n) => match n.parse::<usize>() {
                    Ok(n) if n > 0 => Ok(Some(n)),
                    _ => Err(bad(&format!("the limit must be a whole number of {what} per minute, at least 1"))),
                },
            };
            let limit = Quota { requests: limit("requests")?, tokens: limit("tokens")? };
            if fields.next().is_some() {
                return Err(bad("expected `KEY`, `KEY REQUESTS_PER_MINUTE` or `KEY REQUESTS_PER_MINUTE TOKENS_PER_MINUTE`"));
            }
            if limits.insert(key, limit).is_some() {
                return Err(bad("this key is listed twice"));
            }
        }
        if limits.is_empty() {
            return Err(ServeError::Setup(format!("{what} lists no API key")));
        }
        Ok(ApiKeys { limits, recent: Mutex::new(HashMap::new()) })
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.limits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }

    /// Checks a request carrying `key` when it arrives: a known key with room for one more
    /// request. Records nothing.
    pub fn authorize(&self, key: Option<&str>) -> Result<(), ApiError> {
        self.use_at(key, None, Instant::now())
    }

    /// Charges a valid request of `tokens` source tokens to `key`, or says why not.
    pub fn charge(&self, key: Option<&str>, tokens: usize) -> Result<(), ApiError> {
        self.use_at(key, Some(tokens), Instant::now())
    }

    /// Checks `key`'s quota at `now` and, with `charge`, records a request of that many tokens.
    fn use_at(&self, key: Option<&str>, charge: Option<usize>, now: Instant) -> Result<(), ApiError> {
        let key = key.filter(|k| !k.is_empty()).ok_or_else(|| ApiError::forbidden("an API key is required (api_key)"))?;
        let quota = *self.limits.get(key).ok_or_else(|| ApiError::forbidden("invalid API key"))?;
        if quota == Quota::default() {
            return Ok(());
        }
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let times = recent.entry(key.to_owned()).or_default();
        while times.front().is_some_and(|&(t, _)| now.duration_since(t) >= WINDOW) {
            times.pop_front();
        }
        // Seconds until the entry `i` leaves the window.
        let wait = |i: usize| {
            let t = times.get(i).map_or(now, |&(t, _)| t);
            WINDOW.saturating_sub(now.duration_since(t)).as_secs_f64().ceil().max(1.0) as u64
        };
        if let Some(limit) = quota.requests.filter(|&l| times.len() >= l) {
            return Err(ApiError::rate_limited(&format!("{limit} requests"), wait(times.len() - limit)));
        }
        let tokens = charge.unwrap_or(0);
        if let Some(limit) = quota.tokens {
            if tokens > limit {
                return Err(ApiError::bad_request(format!("the request has {tokens} tokens, above this API key's {limit} per minute")));
            }
            let used: usize = times.iter().map(|&(_, n)| n).sum();
            if used + tokens > limit {
                // The oldest entries that must leave the window for this request to fit.
                let (mut freed, mut i) = (0, 0);
                while used - freed + tokens > limit && i < times.len() {
                    freed += times[i].1;
                    i += 1;
                }
                return Err(ApiError::rate_limited(&format!("{limit} tokens"), wait(i.saturating_sub(1))));
            }
        }
        if charge.is_some() {
            times.push_back((now, tokens));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_limits_and_errors() {
        let keys = ApiKeys::parse("# keys\nopen\n\nlimited 2\n", "keys.txt").unwrap();
        assert_eq!(keys.len(), 2);
        let t0 = Instant::now();
        let charge = |k: &str, t: Instant| keys.use_at(Some(k), Some(1), t);
        assert_eq!(keys.use_at(None, None, t0).unwrap_err().status.as_u16(), 403);
        assert_eq!(keys.use_at(Some("nope"), None, t0).unwrap_err().status.as_u16(), 403);
        for _ in 0..5 {
            charge("open", t0).unwrap();
        }
        charge("limited", t0).unwrap();
        charge("limited", t0 + Duration::from_secs(10)).unwrap();
        let e = charge("limited", t0 + Duration::from_secs(20)).unwrap_err();
        assert_eq!((e.status.as_u16(), e.retry_after), (429, Some(40)));
        charge("limited", t0 + Duration::from_secs(61)).unwrap();
        for (text, needle) in
            [("a 0\n", "line 1"), ("a\nb x\n", "line 2"), ("a\na 3\n", "twice"), ("# none\n", "no API key"), ("a 1 2 3\n", "line 1")]
        {
            let err = ApiKeys::parse(text, "k.txt").err().unwrap().to_string();
            assert!(err.contains(needle) && err.contains("k.txt"), "{text:?}: {err}");
        }
    }

    /// Issue 44, row 14: a token quota, and checking (not charging) a request.
    #[test]
    fn tokens_are_counted_and_checks_cost_nothing() {
        let keys = ApiKeys::parse("k 100 50\n", "keys.txt").unwrap();
        let t0 = Instant::now();
        for _ in 0..10 {
            keys.use_at(Some("k"), None, t0).unwrap();
        }
        keys.use_at(Some("k"), Some(30), t0).unwrap();
        keys.use_at(Some("k"), Some(20), t0 + Duration::from_secs(5)).unwrap();
        let e = keys.use_at(Some("k"), Some(1), t0 + Duration::from_secs(10)).unwrap_err();
        assert_eq!((e.status.as_u16(), e.retry_after), (429, Some(50)));
        assert!(e.message.contains("50 tokens"), "{}", e.message);
        assert_eq!(keys.use_at(Some("k"), Some(51), t0).unwrap_err().status.as_u16(), 400);
        keys.use_at(Some("k"), Some(30), t0 + Duration::from_secs(60)).unwrap();
    }
}
