//! Files written whole or not at all: a temporary file beside the destination, persisted over it
//! by rename (`NamedTempFile::persist`) once complete, removed if dropped before.
use std::path::Path;

use tempfile::NamedTempFile;

/// A temporary file `PREFIX.XXXXXX.tmp` in `dir`. Its mode is an ordinary new file's (`0666`
/// less the umask, as `File::create` gives), not tempfile's private `0600`: a model file or a
/// translation written by one user is read by a server or a colleague running as another.
pub fn temp_beside(dir: &Path, prefix: &str) -> std::io::Result<NamedTempFile> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix).suffix(".tmp");
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    b.tempfile_in(dir)
}
