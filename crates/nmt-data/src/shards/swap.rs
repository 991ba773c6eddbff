//! Where `prepare` writes, and how the result replaces an earlier preparation (issue 44, rows
//! 5 and 6).
//!
//! Everything is written into a new temporary directory beside DIR (`.DIR.XXXXXX.tmp`), so a
//! run that fails (an empty corpus, invalid UTF-8, a full disk) leaves DIR exactly as it was;
//! the temporary directory is removed when dropped. Only a complete preparation is swapped in:
//! a new DIR is the temporary directory renamed; an existing DIR gets the new files moved in,
//! the manifest last (a directory without a manifest is incomplete and never read), and loses
//! only the files its old manifest lists, the ones an earlier `prepare` wrote. A file of DIR
//! that no manifest lists is never deleted or overwritten: a clash with one is an error before
//! anything moves.
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::manifest::{Manifest, MANIFEST};
use crate::error::{Error, Result};

/// Every file a manifest lists (its own name left out).
pub fn listed_files(m: &Manifest) -> Vec<String> {
    let shards = m.shards.iter().flat_map(|s| [&s.tokens, &s.offsets, &s.lengths]);
    shards.chain([&m.src_segmenter, &m.tgt_segmenter]).map(|f| f.name.clone()).collect()
}

/// The earlier preparation in `dir`, if any: the files its manifest lists. A `manifest.json`
/// that is not a prepared corpus's manifest is an error: it is not ours to replace.
fn earlier(dir: &Path) -> Result<Vec<String>> {
    let path = dir.join(MANIFEST);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let m = Manifest::read(dir).map_err(|e| Error::Prepared {
        path: path.clone(),
        reason: format!("exists and is not a manifest `nmt prepare` wrote ({e}); move it away or prepare into another directory"),
    })?;
    Ok(listed_files(&m))
}

/// A new temporary directory beside `dir` to prepare into. `dir` must be a directory or a new
/// path; its earlier manifest, if any, must be one `prepare` wrote (checked now, before the
/// work).
pub fn begin(dir: &Path) -> Result<TempDir> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Prepared { path: dir.to_path_buf(), reason: "is a file: the output of `prepare` is a directory".into() });
    }
    if dir.is_dir() {
        earlier(dir)?;
    }
    let name = dir.file_name().ok_or_else(|| Error::Prepared { path: dir.to_path_buf(), reason: "is not a directory name".into() })?;
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let prefix = format!(".{}.", name.to_string_lossy());
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    // An ordinary new directory's mode (`0777` less the umask), not tempfile's private `0700`:
    // a new DIR is this directory renamed, and other users read it.
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o777));
    b.tempdir_in(parent).map_err(io(dir))
}

/// Swaps the complete preparation in `tmp` (whose manifest is `m`) into `dir`.
pub fn finish(tmp: TempDir, dir: &Path, m: &Manifest) -> Result<()> {
    let io = |path: PathBuf| move |source| Error::Io { path, source };
    if !dir.exists() {
        // A new directory: one rename.
        let tmp = tmp.keep();
        return std::fs::rename(&tmp, dir).map_err(io(dir.to_path_buf()));
    }
    let old = earlier(dir)?;
    let new = listed_files(m);
    if let Some(clash) = new.iter().find(|n| !old.contains(n) && dir.join(n).exists()) {
        return Err(Error::Prepared {
            path: dir.join(clash),
            reason: "exists and was not written by `nmt prepare` (no manifest lists it): not overwritten; move it away".into(),
        });
    }
    // The old manifest goes first: from here until the new one is in, the directory is
    // incomplete, never half old and half new.
    let manifest = dir.join(MANIFEST);
    if manifest.exists() {
        std::fs::remove_file(&manifest).map_err(io(manifest.clone()))?;
    }
    for gone in old.iter().filter(|o| !new.contains(o)) {
        match std::fs::remove_file(dir.join(gone)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::Io { path: dir.join(gone), source: e }),
            _ => {}
        }
    }
    for name in new.iter().map(String::as_str).chain([MANIFEST]) {
        std::fs::rename(tmp.path().join(name), dir.join(name)).map_err(io(dir.join(name)))?;
    }
    Ok(())
}
