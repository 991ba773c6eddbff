//! API keys, as LibreTranslate has them: `nmt serve --api-keys FILE`, one key per line, each
//! optionally followed by its limit in requests per minute (`KEY 60`; none = unlimited).
//! Blank lines and lines starting with `#` are skipped.
//!
//! With keys configured, a translation or detection request must carry a known `api_key`
//! (403 otherwise, LibreTranslate's `{"error": …}` shape), and a key over its limit gets 429 with
//! `Retry-After`: the seconds until its oldest request in the last minute leaves the window.
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{ApiError, ServeError};

/// The window a per-minute limit counts over.
const WINDOW: Duration = Duration::from_secs(60);

/// The configured keys and their recent requests.
pub struct ApiKeys {
    limits: HashMap<String, Option<usize>>,
    recent: Mutex<HashMap<String, VecDeque<Instant>>>,
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
            let limit = match fields.next() {
                None => None,
                Some(n) => match n.parse::<usize>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => return Err(bad("the limit must be a whole number of requests per minute, at least 1")),
                },
            };
            if fields.next().is_some() {
                return Err(bad("expected `KEY` or `KEY REQUESTS_PER_MINUTE`"));
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

    /// Admits a request carrying `key` now, or says why not.
    pub fn admit(&self, key: Option<&str>) -> Result<(), ApiError> {
        self.admit_at(key, Instant::now())
    }

    fn admit_at(&self, key: Option<&str>, now: Instant) -> Result<(), ApiError> {
        let key = key.filter(|k| !k.is_empty()).ok_or_else(|| ApiError::forbidden("an API key is required (api_key)"))?;
        let limit = self.limits.get(key).ok_or_else(|| ApiError::forbidden("invalid API key"))?;
        let Some(limit) = *limit else { return Ok(()) };
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let times = recent.entry(key.to_owned()).or_default();
        while times.front().is_some_and(|&t| now.duration_since(t) >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= limit {
            let oldest = times.front().copied().unwrap_or(now);
            let wait = WINDOW.saturating_sub(now.duration_since(oldest)).as_secs_f64().ceil().max(1.0) as u64;
            return Err(ApiError::rate_limited(limit, wait));
        }
        times.push_back(now);
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
        assert_eq!(keys.admit_at(None, t0).unwrap_err().status.as_u16(), 403);
        assert_eq!(keys.admit_at(Some("nope"), t0).unwrap_err().status.as_u16(), 403);
        for _ in 0..5 {
            keys.admit_at(Some("open"), t0).unwrap();
        }
        keys.admit_at(Some("limited"), t0).unwrap();
        keys.admit_at(Some("limited"), t0 + Duration::from_secs(10)).unwrap();
        let e = keys.admit_at(Some("limited"), t0 + Duration::from_secs(20)).unwrap_err();
        assert_eq!((e.status.as_u16(), e.retry_after), (429, Some(40)));
        keys.admit_at(Some("limited"), t0 + Duration::from_secs(61)).unwrap();
        for (text, needle) in
            [("a 0\n", "line 1"), ("a\nb x\n", "line 2"), ("a\na 3\n", "twice"), ("# none\n", "no API key"), ("a 1 2\n", "line 1")]
        {
            let err = ApiKeys::parse(text, "k.txt").err().unwrap().to_string();
            assert!(err.contains(needle) && err.contains("k.txt"), "{text:?}: {err}");
        }
    }
}
