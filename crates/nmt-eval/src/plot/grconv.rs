//! grConv's learned tree (Cho et al. 2014, "Properties", Figure 2): the pyramid of merge
//! nodes over a sentence, each node joined to the child or children its gates chose.
//!
//! Node `j` of level `t` sits above the gap between its children `j` and `j + 1` of level
//! `t − 1`. Its gates `[ω_c, ω_l, ω_r]` say whether it merged both children (`ω_c`, the new
//! candidate) or copied the left or the right one; the edge to each child is drawn as dark
//! as that child's share (`ω_c + ω_l` left, `ω_c + ω_r` right), and the node is coloured by
//! its dominant gate: black merge, blue left, red right. Chains of copies and bursts of merges
//! read as the parse-like structure the paper shows.
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{perr, render, FAMILY};
use crate::error::{Error, Result};

/// A sentence's tokens and every node's gates: `gates[t − 1][j] = [ω_c, ω_l, ω_r]` for level
/// `t = 1 … n − 1`, node `j = 0 … n − 1 − t`.
#[derive(Debug, Clone, PartialEq)]
pub struct GrConvTree {
    pub tokens: Vec<String>,
    pub gates: Vec<Vec<[f32; 3]>>,
}

impl GrConvTree {
    /// Check the pyramid's shape.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let n = self.tokens.len();
        if n == 0 {
            return Err("no tokens".into());
        }
        if self.gates.len() != n - 1 {
            return Err(format!("{} levels of gates for {n} tokens (want {})", self.gates.len(), n - 1));
        }
        for (t, level) in self.gates.iter().enumerate() {
            if level.len() != n - 1 - t {
                return Err(format!("level {} has {} nodes (want {})", t + 1, level.len(), n - 1 - t));
            }
        }
        Ok(())
    }
}

const STEP: i32 = 44;
/// A node's colour by its dominant gate: `ω_c`, `ω_l`, `ω_r`.
const MERGE: RGBColor = RGBColor(0, 0, 0);
const LEFT: RGBColor = RGBColor(30, 80, 200);
const RIGHT: RGBColor = RGBColor(200, 40, 40);
const MARGIN: i32 = 20;
const LABEL: i32 = 90;

/// Node `j` of level `t`: its centre in pixels.
fn at(t: usize, j: usize, levels: usize) -> (i32, i32) {
    let x = MARGIN + STEP / 2 + (2 * j + t) as i32 * STEP / 2;
    let y = MARGIN + (levels - t) as i32 * STEP;
    (x, y)
}

fn grey(share: f32) -> RGBColor {
    let g = (255.0 * (1.0 - share.clamp(0.0, 1.0))).round() as u8;
    RGBColor(g, g, g)
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, tree: &GrConvTree) -> Result<()> {
    root.fill(&WHITE).map_err(perr)?;
    let levels = tree.tokens.len() - 1;
    for (t1, level) in tree.gates.iter().enumerate() {
        let t = t1 + 1;
        for (j, &[c, l, r]) in level.iter().enumerate() {
            let p = at(t, j, levels);
            root.draw(&PathElement::new(vec![p, at(t - 1, j, levels)], grey(c + l).stroke_width(2))).map_err(perr)?;
            root.draw(&PathElement::new(vec![p, at(t - 1, j + 1, levels)], grey(c + r).stroke_width(2))).map_err(perr)?;
        }
    }
    for (t1, level) in tree.gates.iter().enumerate() {
        for (j, &[c, l, r]) in level.iter().enumerate() {
            let colour = if c >= l && c >= r {
                MERGE
            } else if l >= r {
                LEFT
            } else {
                RIGHT
            };
            root.draw(&Circle::new(at(t1 + 1, j, levels), 5, colour.filled())).map_err(perr)?;
        }
    }
    // The legend, in the empty corner left of the pyramid's top.
    let text = TextStyle::from((FAMILY, 14).into_font()).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let entries = [(MERGE, "merge both children"), (LEFT, "copy the left child"), (RIGHT, "copy the right child")];
    for (k, (colour, what)) in entries.into_iter().enumerate() {
        let y = MARGIN + 8 + 20 * k as i32;
        root.draw(&Circle::new((MARGIN + 5, y), 5, colour.filled())).map_err(perr)?;
        root.draw_text(what, &text, (MARGIN + 16, y)).map_err(perr)?;
    }
    root.draw_text("edge darkness: the child's share", &text, (MARGIN, MARGIN + 68)).map_err(perr)?;
    let style =
        TextStyle::from((FAMILY, 15).into_font()).color(&BLACK).transform(FontTransform::Rotate90).pos(Pos::new(HPos::Left, VPos::Center));
    for (j, w) in tree.tokens.iter().enumerate() {
        let (x, y) = at(0, j, levels);
        root.draw(&Circle::new((x, y), 4, BLACK.filled())).map_err(perr)?;
        root.draw_text(w, &style, (x, y + 10)).map_err(perr)?;
    }
    Ok(())
}

/// Draws `tree` to `out` (`.png` or `.svg`).
pub fn plot_grconv(tree: &GrConvTree, out: impl AsRef<Path>) -> Result<()> {
    tree.validate().map_err(Error::InvalidArgument)?;
    let n = tree.tokens.len() as i32;
    let width = (2 * MARGIN + n * STEP) as u32;
    let height = (2 * MARGIN + (n - 1) * STEP + LABEL + 20) as u32;
    render!(out.as_ref(), (width.max(200), height.max(200)), draw(tree))
}
