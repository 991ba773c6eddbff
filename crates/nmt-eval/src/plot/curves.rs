//! Training curves from a JSONL training log: every line has `"step"`; training
//! lines have `"loss"`, validation lines `"dev_bleu"` and/or `"dev_ppl"`. Drawn as
//! stacked panels sharing the step axis: training loss, dev BLEU, and dev
//! perplexity when the log has it.
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use super::{perr, render, FAMILY};
use crate::error::{Error, Result};

/// The series of a training log, as `(step, value)` points in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainingLog {
    /// Training loss.
    pub loss: Vec<(f64, f64)>,
    /// Validation BLEU.
    pub dev_bleu: Vec<(f64, f64)>,
    /// Validation perplexity.
    pub dev_ppl: Vec<(f64, f64)>,
}

/// Read a JSONL training log; blank lines are skipped, other lines must be JSON
/// objects with a numeric `"step"`.
pub fn read_training_log(path: impl AsRef<Path>) -> Result<TrainingLog> {
    let path = path.as_ref();
    let mut log = TrainingLog::default();
    for (i, line) in crate::io::read_lines(path)?.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |msg: String| Error::Parse { path: path.to_path_buf(), line: i + 1, msg };
        let v: Value = serde_json::from_str(line).map_err(|e| err(e.to_string()))?;
        let step = v.get("step").and_then(Value::as_f64).ok_or_else(|| err("no numeric \"step\"".into()))?;
        let get = |k: &str| v.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
        if let Some(x) = get("loss") {
            log.loss.push((step, x));
        }
        if let Some(x) = get("dev_bleu") {
            log.dev_bleu.push((step, x));
        }
        if let Some(x) = get("dev_ppl") {
            log.dev_ppl.push((step, x));
        }
    }
    Ok(log)
}

fn range(points: &[(f64, f64)], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let (lo, hi) = points.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if !lo.is_finite() {
        (0.0, 1.0)
    } else if hi - lo < 1e-9 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    points: &[(f64, f64)],
    steps: (f64, f64),
    color: RGBColor,
) -> Result<()> {
    let (y0, y1) = range(points, |p| p.1);
    let pad = (y1 - y0) * 0.05;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FAMILY, 22))
        .margin(12)
        .margin_right(36)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(steps.0..steps.1, (y0 - pad)..(y1 + pad))
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x: &f64| format!("{x:.0}"))
        .x_desc("step")
        .y_desc(y_desc)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(perr)?;
    if points.is_empty() {
        let mid = ((steps.0 + steps.1) / 2.0, (y0 + y1) / 2.0);
        chart.draw_series(std::iter::once(Text::new("no data", mid, (FAMILY, 18)))).map_err(perr)?;
        return Ok(());
    }
    chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2))).map_err(perr)?;
    if points.len() <= 60 {
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(perr)?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, log: &TrainingLog) -> Result<()> {
    root.fill(&WHITE).map_err(perr)?;
    let all: Vec<(f64, f64)> = log.loss.iter().chain(&log.dev_bleu).chain(&log.dev_ppl).copied().collect();
    let steps = range(&all, |p| p.0);
    let n = if log.dev_ppl.is_empty() { 2 } else { 3 };
    let areas = root.split_evenly((n, 1));
    panel(&areas[0], "Training loss", "loss", &log.loss, steps, RGBColor(31, 119, 180))?;
    panel(&areas[1], "Validation BLEU", "BLEU", &log.dev_bleu, steps, RGBColor(214, 39, 40))?;
    if n == 3 {
        panel(&areas[2], "Validation perplexity", "perplexity", &log.dev_ppl, steps, RGBColor(44, 160, 44))?;
    }
    Ok(())
}

/// Draw the curves of `log` to `out` (`.png` or `.svg`).
pub fn plot_curves(log: &TrainingLog, out: impl AsRef<Path>) -> Result<()> {
    let height = if log.dev_ppl.is_empty() { 800 } else { 1100 };
    render!(out.as_ref(), (1000, height), draw(log))
}
