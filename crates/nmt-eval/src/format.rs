//! Score presentation as in sacreBLEU 2.6.0's `metrics/base.py`: `Signature.format`
//! (`key:value` pairs joined by `|`, version last) and `Score.format` (text line
//! `NAME|signature = score verbose` and the JSON object printed by `--format json`).
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// The sacreBLEU version whose output this crate reproduces (the fixtures were made with it).
pub const SACREBLEU_VERSION: &str = "2.6.0";

/// `Signature.format(short=False)`: pairs in order, then `version:2.6.0`.
pub(crate) fn signature(pairs: &[(&str, String)]) -> String {
    let mut parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    parts.push(format!("version:{SACREBLEU_VERSION}"));
    parts.join("|")
}

/// `Score.format(width, signature=sig)` for the text form.
pub(crate) fn text_line(name: &str, score: f64, width: usize, verbose: &str, signature: Option<&str>) -> String {
    let mut s = match signature {
        Some(sig) if !sig.is_empty() => format!("{name}|{sig}"),
        _ => name.to_string(),
    };
    s.push_str(&format!(" = {score:.width$}"));
    if !verbose.is_empty() {
        s.push(' ');
        s.push_str(verbose);
    }
    s
}

struct Ordered<'a>(&'a [(String, Value)]);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The fields of `Score.format(is_json=True)`, in sacreBLEU's order.
pub(crate) fn json_fields(name: &str, score: f64, width: usize, verbose: &str, sig: &str) -> Vec<(String, Value)> {
    let rounded: f64 = format!("{score:.width$}").parse().unwrap_or(score);
    let mut fields = vec![
        ("name".to_string(), Value::from(name)),
        ("score".to_string(), Value::from(rounded)),
        ("signature".to_string(), Value::from(sig)),
    ];
    if !verbose.is_empty() {
        fields.push(("verbose_score".to_string(), Value::from(verbose)));
    }
    for pair in sig.split('|') {
        if let Some((k, v)) = pair.split_once(':') {
            fields.push((k.to_string(), Value::from(v)));
        }
    }
    fields
}

/// `json.dumps(d, indent=1, ensure_ascii=False)` of ordered fields.
pub(crate) fn json_pretty(fields: &[(String, Value)]) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if Ordered(fields).serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(buf).unwrap_or_default()
}

/// The same object on one line (for JSON-lines output).
pub(crate) fn json_compact(fields: &[(String, Value)]) -> String {
    serde_json::to_string(&Ordered(fields)).unwrap_or_default()
}
