//! NumPy `.npz` archives as Marian writes them (cnpy): a zip of `NAME.npy` arrays, float32
//! weights and the int8 bytes of `special:model.yml`. The zip is read by `zip` (the version
//! candle already builds, stored and deflated entries), each array by `npyz`.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// One float32 array: its shape and its values in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// An archive's float32 arrays by name, and its int8/uint8 arrays as bytes (Marian's
/// `special:*` entries).
#[derive(Debug, Default)]
pub struct Npz {
    pub floats: BTreeMap<String, Array>,
    pub bytes: BTreeMap<String, Vec<u8>>,
}

/// Reads an `.npz` file.
///
/// # Errors
/// [`Error::Io`] when it cannot be read; [`Error::Input`] naming the file and the entry when
/// it is not a zip of `.npy` arrays, or an array has a type other than float32 and (u)int8.
pub fn read(path: &Path) -> Result<Npz> {
    let bad = |reason: String| Error::Input(format!("{}: not a NumPy .npz archive: {reason}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| bad(e.to_string()))?;
    let mut out = Npz::default();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let full = entry.name().map_err(|e| bad(e.to_string()))?.into_owned();
        let Some(name) = full.strip_suffix(".npy").map(str::to_owned) else { continue };
        let mut raw = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut raw).map_err(|e| bad(format!("{name}: {e}")))?;
        let npy = npyz::NpyFile::new(&raw[..]).map_err(|e| bad(format!("{name}: {e}")))?;
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let descr = npy.dtype().descr();
        let fail = |e: std::io::Error| bad(format!("{full}: {e}"));
        match descr.trim_matches(['\'', '"']).trim_start_matches(['<', '|', '=']) {
            "f4" => {
                let data = npy.into_vec::<f32>().map_err(fail)?;
                out.floats.insert(name, Array { shape, data });
            }
            "i1" => {
                let data = npy.into_vec::<i8>().map_err(fail)?;
                out.bytes.insert(name, data.into_iter().map(|b| b as u8).collect());
            }
            "u1" => {
                out.bytes.insert(name, npy.into_vec::<u8>().map_err(fail)?);
            }
            other => return Err(bad(format!("{name} has type {other} (float32 weights are expected)"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use npyz::WriterBuilder;

    use super::*;

    fn npy<T: npyz::Serialize + npyz::AutoSerialize + Copy>(shape: &[u64], data: &[T]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(&mut buf).begin_nd().unwrap();
        w.extend(data.iter().copied()).unwrap();
        w.finish().unwrap();
        buf
    }

    #[test]
    fn reads_floats_and_the_yaml_bytes_of_a_marian_archive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.npz");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        z.start_file("decoder_W.npy", opts).unwrap();
        z.write_all(&npy(&[2, 3], &[1f32, 2., 3., 4., 5., 6.])).unwrap();
        z.start_file("special:model.yml.npy", opts).unwrap();
        z.write_all(&npy(&[4], &[b't' as i8, b'y' as i8, b'p' as i8, b'e' as i8])).unwrap();
        z.finish().unwrap();
        let n = read(&path).unwrap();
        assert_eq!(n.floats["decoder_W"], Array { shape: vec![2, 3], data: vec![1., 2., 3., 4., 5., 6.] });
        assert_eq!(n.bytes["special:model.yml"], b"type");
        std::fs::write(&path, b"not a zip").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("model.npz: not a NumPy .npz"));
    }
}
