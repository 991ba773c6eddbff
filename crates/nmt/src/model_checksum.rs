//! The model file's checksums (issue 44, row 4).
//!
//! Files of format `nmt-model/2` carry [`FILE_KEY`]: a CRC-32 of the whole file — the 8-byte
//! length, the header (tensor names, dtypes, shapes, offsets, and the metadata: config,
//! vocabularies, search defaults) and the data — computed with its own 8 hex digits replaced by
//! [`PLACEHOLDER`]. Any changed byte (a dtype `"F32"`→`"I32"`, a vocabulary id) is an error.
//! Files of format `nmt-model/1` carry only [`DATA_KEY`], the CRC of the tensor data; they still
//! load, with one warning that their header is not checked.
use crate::error::{Error, Result};

/// Format tag stored under `format`; bump when the layout changes. `nmt-model/2` files carry
/// the whole file's checksum.
pub const FORMAT: &str = "nmt-model/2";
/// The previous format: the same layout with the tensor data's checksum only. Still read.
pub const FORMAT_V1: &str = "nmt-model/1";

/// Metadata key of the CRC-32 of the tensor data (hex; both formats write it).
pub const DATA_KEY: &str = "data_crc32";
/// Metadata key of the CRC-32 of the whole file (hex; `nmt-model/2`).
pub const FILE_KEY: &str = "file_crc32";
/// What the checksums' values are while they are computed: the same width as 8 hex digits, so
/// no offset moves when the value is written over it.
pub const PLACEHOLDER: &str = "________";

/// The data section of safetensors bytes: everything after the 8-byte length and the header.
pub fn data_section(bytes: &[u8]) -> Option<&[u8]> {
    let n = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    bytes.get(8usize.checked_add(usize::try_from(n).ok()?)?..)
}

/// Where the 8-character value of metadata key `key` lies in the header of `bytes`: the JSON
/// safetensors writes is compact, `"key":"value"`, and unique.
fn value_at(bytes: &[u8], key: &str) -> Option<usize> {
    let header_end = bytes.len() - data_section(bytes)?.len();
    let needle = format!("\"{key}\":\"");
    let header = &bytes[..header_end];
    let at = header.windows(needle.len()).position(|w| w == needle.as_bytes())? + needle.len();
    (header.get(at + PLACEHOLDER.len()) == Some(&b'"')).then_some(at)
}

/// The CRC of the whole file with the value at `at` read as the placeholder.
fn file_crc(bytes: &[u8], at: usize) -> String {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..at]);
    h.update(PLACEHOLDER.as_bytes());
    h.update(&bytes[at + PLACEHOLDER.len()..]);
    format!("{:08x}", h.finalize())
}

/// Writes both checksums over their placeholders in freshly serialised bytes (the metadata
/// held [`PLACEHOLDER`] under [`DATA_KEY`] and [`FILE_KEY`]). The data's goes first: the
/// file's covers it.
pub fn seal(bytes: &mut [u8]) -> Result<()> {
    let place =
        |bytes: &[u8], key: &str| value_at(bytes, key).ok_or_else(|| Error::Input(format!("cannot place {key} in the safetensors header")));
    let data_crc = format!("{:08x}", crc32fast::hash(data_section(bytes).unwrap_or_default()));
    let at = place(bytes, DATA_KEY)?;
    bytes[at..at + 8].copy_from_slice(data_crc.as_bytes());
    let at = place(bytes, FILE_KEY)?;
    let crc = file_crc(bytes, at);
    bytes[at..at + 8].copy_from_slice(crc.as_bytes());
    Ok(())
}

/// How a file's bytes checked out.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// The whole file's checksum matches.
    Whole,
    /// An older file: only its tensor data's checksum, which matches.
    DataOnly,
}

/// Verifies `bytes` against the checksums their metadata `meta` (already parsed) holds; the
/// error is the reason, for the caller to name the file. A file that says `nmt-model/2` (or
/// holds [`FILE_KEY`] at all) must match the whole-file checksum; any other must match its data
/// checksum if it has one (an `nmt-model/1` file; the format check refuses other formats).
pub fn verify(bytes: &[u8], meta: &std::collections::HashMap<String, String>) -> std::result::Result<Checked, String> {
    // A file that says it is `nmt-model/2` must carry the whole checksum: damaging the key's
    // name cannot pass it off as an older file (that takes two changed bytes, and the format's
    // byte is itself covered once the key is found).
    let wants_whole = meta.contains_key(FILE_KEY) || meta.get("format").is_some_and(|f| f == FORMAT);
    if wants_whole {
        let want = meta.get(FILE_KEY).ok_or_else(|| format!("{FILE_KEY} is missing: the file is corrupt"))?;
        let at = value_at(bytes, FILE_KEY).ok_or_else(|| format!("{FILE_KEY} is damaged: the file is corrupt"))?;
        let got = file_crc(bytes, at);
        if *want != got {
            return Err(format!("the file's checksum is {got}, the file says {want}: the file is corrupt"));
        }
        return Ok(Checked::Whole);
    }
    if let Some(want) = meta.get(DATA_KEY) {
        let got = format!("{:08x}", crc32fast::hash(data_section(bytes).unwrap_or_default()));
        if *want != got {
            return Err(format!("the tensor data's checksum is {got}, the file says {want}: the file is corrupt"));
        }
    }
    Ok(Checked::DataOnly)
}
