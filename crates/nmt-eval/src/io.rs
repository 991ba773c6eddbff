//! Reading hypothesis, reference, source and vocabulary files, like sacreBLEU's
//! CLI does (`utils.smart_open(..., newline="\n")` then `line.rstrip()`), with
//! errors that name the file (and the line for invalid UTF-8). Gzipped input is recognised
//! by its magic bytes (sacreBLEU's `smart_open` goes by the `.gz` suffix; the bytes also catch
//! a gzipped stdin) and decompressed whole.
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::text::{py_rstrip, py_split};

/// Split bytes into lines on `\n`, right-strip each (Python whitespace), check UTF-8.
/// A final line without a newline counts; a trailing newline adds no empty line.
pub fn lines_from_bytes(bytes: &[u8], name: &Path) -> Result<Vec<String>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    body.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, raw)| match std::str::from_utf8(raw) {
            Ok(s) => Ok(py_rstrip(s).to_string()),
            Err(_) => Err(Error::Utf8 { path: name.to_path_buf(), line: i + 1 }),
        })
        .collect()
}

/// Read a text file, plain or gzipped, into right-stripped lines.
pub fn read_lines(path: impl AsRef<Path>) -> Result<Vec<String>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| Error::Io { path: path.to_path_buf(), error })?;
    lines_from_bytes(&gunzipped(bytes, path)?, path)
}

/// Read lines, plain or gzipped, from any reader (e.g. stdin); `name` is used in error messages.
pub fn read_lines_from(mut reader: impl Read, name: &str) -> Result<Vec<String>> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(|error| Error::Io { path: PathBuf::from(name), error })?;
    lines_from_bytes(&gunzipped(bytes, Path::new(name))?, Path::new(name))
}

/// `bytes` decompressed when they start with gzip's magic number (every member of a
/// multi-member file, as `gzip -c a b` writes), else as they are.
fn gunzipped(bytes: Vec<u8>, name: &Path) -> Result<Vec<u8>> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .map_err(|error| Error::Io { path: name.to_path_buf(), error })?;
    Ok(out)
}

/// Read a vocabulary file: one token per line, first whitespace-separated column
/// (so `word count` files work); empty lines are skipped.
pub fn read_vocab(path: impl AsRef<Path>) -> Result<HashSet<String>> {
    Ok(read_lines(path)?.iter().filter_map(|l| py_split(l).next().map(str::to_string)).collect())
}

/// Check that a parallel stream read from `path` has as many lines as the hypotheses.
pub fn check_same_length(path: &Path, lines: &[String], expected: usize) -> Result<()> {
    if lines.len() != expected {
        return Err(Error::LengthMismatch { what: path.display().to_string(), expected, found: lines.len() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting_and_utf8_errors() {
        let p = Path::new("x.txt");
        assert_eq!(lines_from_bytes(b"a \nb\r\n\nc", p).unwrap(), ["a", "b", "", "c"]);
        assert_eq!(lines_from_bytes(b"a\n", p).unwrap(), ["a"]);
        assert!(lines_from_bytes(b"", p).unwrap().is_empty());
        assert_eq!(lines_from_bytes(b"\n", p).unwrap(), [""]);
        let e = lines_from_bytes(b"ok\nbad\xff\n", p).unwrap_err();
        assert_eq!(e.to_string(), "x.txt:2: invalid UTF-8");
    }

    #[test]
    fn gzipped_files_and_streams_read_as_their_text() {
        use std::io::Write;
        let gz = |text: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text).unwrap();
            e.finish().unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ref.gz");
        // Two members, as `cat a.gz b.gz` makes: both are read.
        std::fs::write(&p, [gz(b"uno dos \n"), gz(b"tres\n")].concat()).unwrap();
        assert_eq!(read_lines(&p).unwrap(), ["uno dos", "tres"]);
        assert_eq!(read_lines_from(gz(b"a\nb\n").as_slice(), "<stdin>").unwrap(), ["a", "b"]);
        // A damaged file names itself.
        std::fs::write(&p, &gz(b"uno\n")[..12]).unwrap();
        assert!(read_lines(&p).unwrap_err().to_string().contains("ref.gz"));
    }

    #[test]
    fn missing_file_names_the_file() {
        let e = read_lines("/nonexistent/hyp.txt").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/hyp.txt: "));
    }
}
