//! Pictures with `plotters` (PNG or SVG, chosen by the output file's extension):
//! attention heatmaps ([`attention`], Bahdanau et al. 2015, Figure 3), training
//! curves ([`curves`]), BLEU by sentence length ([`by_length`], Figure 2), grConv trees
//! ([`grconv`]) and maps of phrase vectors ([`embedding`], Cho et al. 2014, Figure 4).
//!
//! Text is drawn with DejaVu Sans embedded in the crate (`assets/DejaVuSans.ttf`,
//! Bitstream Vera licence in `assets/DejaVuSans-LICENSE.txt`), registered with
//! plotters' `ab_glyph` backend, so labels render on machines without system fonts.
use std::path::Path;
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

use crate::error::{Error, Result};

pub mod attention;
pub mod by_length;
pub mod curves;
pub mod embedding;
pub mod grconv;

pub use attention::{plot_attention, read_attention, Attention};
pub use by_length::plot_by_length;
pub use curves::{plot_curves, read_training_log, TrainingLog};
pub use embedding::{pca_2d, plot_embedding, Pca2d};
pub use grconv::{plot_grconv, GrConvTree};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The font family every plot uses (registered on first use).
pub(crate) const FAMILY: &str = "sans-serif";

/// Register the embedded font once; later calls return the first result.
pub(crate) fn ensure_font() -> Result<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        let normal = register_font(FAMILY, FontStyle::Normal, FONT).is_ok();
        let bold = register_font(FAMILY, FontStyle::Bold, FONT).is_ok();
        normal && bold
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Plot("cannot load the embedded DejaVu Sans font".into()))
    }
}

/// Output format, from the file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// `.png`
    Png,
    /// `.svg`
    Svg,
}

impl ImageFormat {
    /// `.png` or `.svg` (case-insensitive); anything else is an error.
    pub fn from_path(path: &Path) -> Result<Self> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(ImageFormat::Png),
            Some("svg") => Ok(ImageFormat::Svg),
            _ => Err(Error::InvalidArgument(format!("{}: output picture must end in .png or .svg", path.display()))),
        }
    }
}

/// Map a plotters error to [`Error::Plot`], naming the output file.
pub(crate) fn plot_err(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> Error + '_ {
    move |e| Error::Plot(format!("{}: {e}", path.display()))
}

/// Check the output directory exists (plotters only reports it when saving).
pub(crate) fn check_output(path: &Path) -> Result<ImageFormat> {
    let fmt = ImageFormat::from_path(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(Error::Io {
                path: path.to_path_buf(),
                error: std::io::Error::new(std::io::ErrorKind::NotFound, "output directory does not exist"),
            });
        }
    }
    ensure_font()?;
    Ok(fmt)
}

/// Render with the backend matching `path`'s extension: `$draw` is a generic
/// function `fn(DrawingArea<DB, Shift>, ...) -> Result<()>` called with the root area.
macro_rules! render {
    ($path:expr, $size:expr, $draw:ident ( $($arg:expr),* )) => {{
        let path: &std::path::Path = $path;
        match $crate::plot::check_output(path)? {
            $crate::plot::ImageFormat::Png => {
                let root = plotters::prelude::BitMapBackend::new(path, $size).into_drawing_area();
                $draw(&root, $($arg),*)?;
                root.present().map_err(|e| $crate::plot::plot_err(path)(&e))
            }
            $crate::plot::ImageFormat::Svg => {
                let root = plotters::prelude::SVGBackend::new(path, $size).into_drawing_area();
                $draw(&root, $($arg),*)?;
                root.present().map_err(|e| $crate::plot::plot_err(path)(&e))
            }
        }
    }};
}
pub(crate) use render;

/// Turn any plotters drawing error into [`Error::Plot`].
pub(crate) fn perr<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}
