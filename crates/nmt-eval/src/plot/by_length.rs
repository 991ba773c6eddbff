//! BLEU against source sentence length, like Bahdanau et al. (2015), Figure 2:
//! x = source length bucket, y = BLEU, one line per system, with a legend.
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{perr, render, FAMILY};
use crate::by_length::ByLength;
use crate::error::Result;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &ByLength) -> Result<()> {
    root.fill(&WHITE).map_err(perr)?;
    let n = r.counts.len();
    let y_max = r.systems.iter().flat_map(|s| s.buckets.iter().flatten().map(|b| b.score)).fold(0.0f64, f64::max);
    let y_top = ((y_max / 5.0).ceil() * 5.0).max(5.0);
    let mut chart = ChartBuilder::on(root)
        .caption("BLEU by source sentence length", (FAMILY, 24))
        .margin(16)
        .x_label_area_size(55)
        .y_label_area_size(65)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_top)
        .map_err(perr)?;
    let spec = r.spec;
    let label = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
            spec.label(i as usize)
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&label)
        .x_desc("Sentence length (source words)")
        .y_desc("BLEU score")
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(perr)?;
    for (k, sys) in r.systems.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let points: Vec<(f64, f64)> = sys.buckets.iter().enumerate().filter_map(|(i, b)| b.as_ref().map(|b| (i as f64, b.score))).collect();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(perr)?
            .label(sys.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(perr)?;
    }
    if !r.systems.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, 16))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(perr)?;
    }
    Ok(())
}

/// Draw `r` to `out` (`.png` or `.svg`).
pub fn plot_by_length(r: &ByLength, out: impl AsRef<Path>) -> Result<()> {
    render!(out.as_ref(), (900, 600), draw(r))
}
