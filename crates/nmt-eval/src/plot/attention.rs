//! Attention heatmap like Bahdanau et al. (2015), Figure 3: one cell per
//! (target token, source token), grey level = weight (0 black, 1 white), source
//! tokens along the top (rotated), target tokens down the left side.
//!
//! Input: JSON lines, each `{"src": [...], "tgt": [...], "weights": [[...]]}` with
//! `weights[i][j]` the attention of target token `i` on source token `j`.
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;

use super::{perr, render, FAMILY};
use crate::error::{Error, Result};

/// One sentence's attention weights.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Attention {
    /// Source tokens (columns).
    pub src: Vec<String>,
    /// Target tokens (rows).
    pub tgt: Vec<String>,
    /// `weights[i][j]`: attention of target token `i` on source token `j`.
    pub weights: Vec<Vec<f32>>,
}

impl Attention {
    /// Check that `weights` is `tgt.len()` rows of `src.len()` numbers.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.weights.len() != self.tgt.len() {
            return Err(format!("{} weight rows for {} target tokens", self.weights.len(), self.tgt.len()));
        }
        for (i, row) in self.weights.iter().enumerate() {
            if row.len() != self.src.len() {
                return Err(format!("weight row {i} has {} entries for {} source tokens", row.len(), self.src.len()));
            }
        }
        if self.src.is_empty() || self.tgt.is_empty() {
            return Err("empty source or target".into());
        }
        Ok(())
    }
}

/// Read entry `index` (0-based, counting non-blank lines) of an attention JSONL file.
pub fn read_attention(path: impl AsRef<Path>, index: usize) -> Result<Attention> {
    let path = path.as_ref();
    let lines = crate::io::read_lines(path)?;
    let mut seen = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if seen == index {
            let parse = |msg: String| Error::Parse { path: path.to_path_buf(), line: i + 1, msg };
            let att: Attention = serde_json::from_str(line).map_err(|e| parse(e.to_string()))?;
            att.validate().map_err(parse)?;
            return Ok(att);
        }
        seen += 1;
    }
    Err(Error::InvalidArgument(format!("{}: no entry {index} (the file has {seen})", path.display())))
}

const FONT_SIZE: u32 = 16;
const MARGIN: u32 = 12;

fn cell_size(att: &Attention) -> u32 {
    let n = att.src.len().max(att.tgt.len()) as u32;
    (1400 / n.max(1)).clamp(6, 36)
}

fn font_size(att: &Attention) -> u32 {
    if cell_size(att) < 14 {
        11
    } else {
        FONT_SIZE
    }
}

/// `(cell, left, top)`: cell size and the margins taken by the labels.
fn layout(att: &Attention) -> (u32, u32, u32) {
    // Estimate label extents from character counts (~0.62 em each, generous for DejaVu Sans).
    let fs = font_size(att);
    let est = |v: &[String]| v.iter().map(|s| s.chars().count()).max().unwrap_or(0) as u32 * fs * 62 / 100;
    (cell_size(att), est(&att.tgt) + 2 * MARGIN, est(&att.src) + 2 * MARGIN)
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, att: &Attention) -> Result<()> {
    root.fill(&WHITE).map_err(perr)?;
    let style = TextStyle::from((FAMILY, font_size(att)).into_font()).color(&BLACK);
    let (cell, left, top) = layout(att);
    let (cell, left, top) = (cell as i32, left as i32, top as i32);
    for (i, row) in att.weights.iter().enumerate() {
        for (j, &w) in row.iter().enumerate() {
            let v = if w.is_finite() { w.clamp(0.0, 1.0) } else { 0.0 };
            let g = (v * 255.0).round() as u8;
            let (x, y) = (left + j as i32 * cell, top + i as i32 * cell);
            root.draw(&Rectangle::new([(x, y), (x + cell, y + cell)], RGBColor(g, g, g).filled())).map_err(perr)?;
        }
    }
    let (w, h) = (att.src.len() as i32 * cell, att.tgt.len() as i32 * cell);
    root.draw(&Rectangle::new([(left, top), (left + w, top + h)], BLACK.stroke_width(1))).map_err(perr)?;
    // Target tokens: right-aligned, left of each row.
    let tgt_style = style.pos(Pos::new(HPos::Right, VPos::Center));
    for (i, t) in att.tgt.iter().enumerate() {
        root.draw_text(t, &tgt_style, (left - MARGIN as i32 / 2, top + i as i32 * cell + cell / 2)).map_err(perr)?;
    }
    // Source tokens: rotated, reading upwards, ending just above each column.
    let src_style = style.transform(FontTransform::Rotate270).pos(Pos::new(HPos::Left, VPos::Center));
    for (j, s) in att.src.iter().enumerate() {
        root.draw_text(s, &src_style, (left + j as i32 * cell + cell / 2, top - MARGIN as i32 / 2)).map_err(perr)?;
    }
    Ok(())
}

/// Draw `att` to `out` (`.png` or `.svg`).
pub fn plot_attention(att: &Attention, out: impl AsRef<Path>) -> Result<()> {
    att.validate().map_err(Error::InvalidArgument)?;
    let (cell, left, top) = layout(att);
    let width = left + att.src.len() as u32 * cell + 2 * MARGIN;
    let height = top + att.tgt.len() as u32 * cell + 2 * MARGIN;
    render!(out.as_ref(), (width.max(200), height.max(200)), draw(att))
}
