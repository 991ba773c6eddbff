//! The one writer of every output file of every command (translations, scores, alignments,
//! model files, checkpoints).
//!
//! What a path names decides how it is written:
//! - a regular file, or a path that does not exist yet: written atomically, to a temporary file
//!   beside it that is synced and renamed over it only once complete ([`crate::atomic`]);
//! - a FIFO, a character device (`/dev/null`, a terminal), a socket: opened and written in
//!   place, as a stream. Renaming a regular file over them would replace the device node or the
//!   pipe (issue 44: `-o /dev/full` became a regular file) and its reader would get nothing;
//! - a symbolic link: followed to its target, which is then written as above; the link stays.
//!
//! [`check_distinct`] refuses an output that is one of the command's inputs, or two outputs
//! that are one file, before anything is read.
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// Symbolic links followed before giving up, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

enum Target {
    Atomic(NamedTempFile),
    Stream(File),
}

/// An output being written; [`OutputFile::commit`] finishes it. Dropped uncommitted, an atomic
/// output's temporary file is deleted and its destination is untouched.
pub struct OutputFile {
    target: Target,
    /// The file actually written: the path with its symbolic links followed.
    dest: PathBuf,
}

/// `path` with symbolic links followed (also a dangling one: its target is a new path). A path
/// whose last component is not a link is returned as it is; links in its folders need no
/// resolving, as the rename happens inside the folder they lead to.
pub fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!("{}: too many levels of symbolic links", path.display())))
}

impl OutputFile {
    /// Opens `path` for writing (see the module's doc for how each kind of path is written).
    pub fn create(path: &Path) -> io::Result<Self> {
        // `metadata` follows every link, the kernel's "magic" ones too (`/dev/stdout` →
        // `/proc/self/fd/1` → `pipe:[…]`, which is no path to resolve by hand).
        let existing = match std::fs::metadata(path) {
            Ok(m) => Some(m.file_type()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        match existing {
            Some(t) if t.is_dir() => Err(io::Error::other("is a directory, not a file")),
            Some(t) if !t.is_file() => {
                Ok(OutputFile { target: Target::Stream(OpenOptions::new().write(true).open(path)?), dest: path.to_path_buf() })
            }
            // An existing regular file: replaced where it really is, whatever links lead there.
            Some(_) => Self::atomic(std::fs::canonicalize(path)?),
            // A new file, or a dangling link's target.
            None => Self::atomic(follow_links(path)?),
        }
    }

    /// A temporary file beside `dest`, renamed over it by [`OutputFile::commit`].
    fn atomic(dest: PathBuf) -> io::Result<Self> {
        let name = dest.file_name().ok_or_else(|| io::Error::other("not a file name"))?;
        let dir = dest.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        // `.NAME.XXXXXX.tmp` beside the destination: removed if dropped unpersisted, and by
        // training's start when a kill left one (`*.tmp`).
        let tmp = crate::atomic::temp_beside(dir, &format!(".{}.", name.to_string_lossy()))?;
        Ok(OutputFile { target: Target::Atomic(tmp), dest })
    }

    /// Whether the output is written in place (a FIFO, a device) rather than atomically.
    pub fn is_stream(&self) -> bool {
        matches!(self.target, Target::Stream(_))
    }

    /// Finishes the output: an atomic one is synced and renamed over its destination; a
    /// stream is flushed (syncing a pipe or a device is not possible, nor needed).
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::Atomic(f) => {
                f.as_file().sync_all()?;
                f.persist(&self.dest).map(drop).map_err(|e| e.error)
            }
            Target::Stream(mut f) => f.flush(),
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.target {
            Target::Atomic(f) => f.write(buf),
            Target::Stream(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.target {
            Target::Atomic(f) => f.flush(),
            Target::Stream(f) => f.flush(),
        }
    }
}

/// Writes `bytes` to `path` whole ([`OutputFile`]).
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OutputFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// What makes two paths one file: the device and inode of an existing file, the absolute path
/// of a new one. `None` for standard input/output (`-`) and character devices, which several
/// streams share harmlessly (`-i /dev/stdin -o /dev/stdout` on a terminal).
#[derive(PartialEq)]
enum Identity {
    #[cfg_attr(not(unix), allow(dead_code))]
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    if path == Path::new("-") {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(m) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::{FileTypeExt, MetadataExt};
                if m.file_type().is_char_device() {
                    return None;
                }
                Some(Identity::Inode(m.dev(), m.ino()))
            }
            #[cfg(not(unix))]
            {
                let _ = m;
                Some(Identity::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())))
            }
        }
        Err(_) => {
            // A new file: its folder's absolute path and its name (`./a` and `a` are one).
            let dest = follow_links(path).unwrap_or_else(|_| path.to_path_buf());
            let name = dest.file_name().map(PathBuf::from).unwrap_or_default();
            let dir = dest.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Some(Identity::Path(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()).join(name)))
        }
    }
}

/// Refuses an output that is one of `inputs` or another of `outputs` (the same file by any
/// name: a link, `./f`, a hard link). Called before anything is read, so a refused command
/// leaves every file as it was.
pub fn check_distinct(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    let ids: Vec<_> = outputs.iter().map(|p| identity(p)).collect();
    for (i, (out, id)) in outputs.iter().zip(&ids).enumerate() {
        let Some(id) = id else { continue };
        if let Some(input) = inputs.iter().find(|p| identity(p).as_ref() == Some(id)) {
            return Err(Error::SameFile { output: out.to_path_buf(), other: input.to_path_buf(), what: "input" });
        }
        if let Some(j) = ids[..i].iter().position(|o| o.as_ref() == Some(id)) {
            return Err(Error::SameFile { output: out.to_path_buf(), other: outputs[j].to_path_buf(), what: "output" });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x\n").unwrap();
        let dotted = dir.path().join(".").join("f");
        assert!(check_distinct(&[&f], &[&dotted]).is_err());
        assert!(check_distinct(&[], &[&dir.path().join("new"), &dir.path().join("new")]).is_err());
        assert!(check_distinct(&[&f], &[&dir.path().join("g"), &dir.path().join("h")]).is_ok());
        assert!(check_distinct(&[Path::new("-")], &[Path::new("-")]).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("target", &link).unwrap();
        assert!(check_distinct(&[&target], &[&link]).is_err());
        write_whole(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
