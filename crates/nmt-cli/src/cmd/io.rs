//! Files in and out for the commands that stream: input lines one at a time (gzip detected by
//! its magic bytes) with their line numbers, and outputs written atomically.
//!
//! An output file goes through `nmt_data::output::OutputFile`: a regular file (or a new one) is
//! written to a temporary file beside it and persisted over it only by [`Output::commit`], after
//! everything was written and synced: a run that fails (a malformed line, a full disk, Ctrl-C)
//! leaves the previous file, or none, never a partial one. A FIFO or a device is written in
//! place; a symbolic link is followed. A name ending in `.gz` is gzip-compressed.
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use nmt::data::output::OutputFile;

/// Lines of a file, or of stdin for `None` or `-`, read one at a time.
pub struct Lines {
    reader: Box<dyn BufRead>,
    name: String,
    line: usize,
    buf: Vec<u8>,
}

impl Lines {
    pub fn open(path: Option<&Path>) -> Result<Self> {
        let (name, raw): (String, Box<dyn Read>) = match path {
            Some(p) if p != Path::new("-") => {
                (p.display().to_string(), Box::new(File::open(p).with_context(|| format!("cannot read {}", p.display()))?))
            }
            _ => ("<stdin>".to_string(), Box::new(std::io::stdin())),
        };
        let mut peek = BufReader::with_capacity(1 << 16, raw);
        let gz = peek.fill_buf().with_context(|| format!("cannot read {name}"))?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead> =
            if gz { Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(peek))) } else { Box::new(peek) };
        Ok(Lines { reader, name, line: 0, buf: Vec::new() })
    }

    /// What is read, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next line (without its end of line) and its 1-based number; `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, String)>> {
        Ok(self.next_with_ending()?.map(|(n, l, _)| (n, l)))
    }

    /// [`Lines::next_line`] and the line's ending as read (`"\n"`, `"\r\n"`, or `""` at the
    /// end of a file without a final newline), for outputs that keep every byte.
    pub fn next_with_ending(&mut self) -> Result<Option<(usize, String, &'static str)>> {
        self.buf.clear();
        let n = self.reader.read_until(b'\n', &mut self.buf).with_context(|| format!("cannot read {}", self.name))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let (bytes, ending) = match self.buf.strip_suffix(b"\n") {
            Some(b) => match b.strip_suffix(b"\r") {
                Some(b) => (b, "\r\n"),
                None => (b, "\n"),
            },
            None => (&self.buf[..], ""),
        };
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Some((self.line, s.to_string(), ending))),
            Err(_) => bail!("{}: line {}: invalid UTF-8", self.name, self.line),
        }
    }
}

enum Sink {
    Stdout(BufWriter<std::io::Stdout>),
    File(BufWriter<OutputFile>),
    Gz(GzEncoder<BufWriter<OutputFile>>),
}

/// Standard output, or a file written by the one output writer (see the module's doc).
pub struct Output {
    sink: Sink,
    /// The name given, for messages.
    path: Option<PathBuf>,
}

impl Output {
    pub fn create(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            return Ok(Output { sink: Sink::Stdout(BufWriter::new(std::io::stdout())), path: None });
        };
        let file = OutputFile::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let file = BufWriter::with_capacity(1 << 16, file);
        let sink = if path.extension().is_some_and(|e| e == "gz") {
            Sink::Gz(GzEncoder::new(file, flate2::Compression::default()))
        } else {
            Sink::File(file)
        };
        Ok(Output { sink, path: Some(path.to_path_buf()) })
    }

    /// Finishes the output: flushes standard output or a stream, or syncs the temporary file
    /// and renames it to its name.
    pub fn commit(mut self) -> Result<()> {
        let sink = std::mem::replace(&mut self.sink, Sink::Stdout(BufWriter::new(std::io::stdout())));
        let file = match sink {
            Sink::Stdout(mut w) => return Ok(w.flush()?),
            Sink::File(w) => w.into_inner().map_err(|e| e.into_error())?,
            Sink::Gz(w) => w.finish()?.into_inner().map_err(|e| e.into_error())?,
        };
        let path = self.path.take().context("an output file without its name")?;
        file.commit().with_context(|| format!("cannot write {}", path.display()))
    }
}

/// Refuses outputs that are an input or each other ([`nmt::data::output::check_distinct`]),
/// before any input is read; `None`s (stdin, stdout) are left out.
pub fn check_distinct(inputs: &[Option<&Path>], outputs: &[Option<&Path>]) -> Result<()> {
    let inputs: Vec<&Path> = inputs.iter().flatten().copied().collect();
    let outputs: Vec<&Path> = outputs.iter().flatten().copied().collect();
    Ok(nmt::data::output::check_distinct(&inputs, &outputs)?)
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w) => w.write(buf),
            Sink::Gz(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w) => w.flush(),
            Sink::Gz(w) => w.flush(),
        }
    }
}
