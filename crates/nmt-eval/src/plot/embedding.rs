//! A labelled 2-D map of phrase vectors (Cho et al. 2014, Figure 4: phrases placed by their
//! RNN Encoder-Decoder summaries). The projection is PCA: the vectors are centred and projected
//! on the two leading eigenvectors of their covariance (`nalgebra`'s symmetric
//! eigen-decomposition; each vector's sign fixed, so the same vectors give the same picture).
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{perr, render, FAMILY};
use crate::error::{Error, Result};

/// Vectors projected on their two leading principal components.
#[derive(Clone, Debug, PartialEq)]
pub struct Pca2d {
    /// Each vector's coordinates.
    pub points: Vec<(f64, f64)>,
    /// The share of the variance each component explains.
    pub shares: [f64; 2],
}

/// The PCA of `vectors` (see the module's doc).
pub fn pca_2d(vectors: &[Vec<f32>]) -> Result<Pca2d> {
    let d = vectors.first().map_or(0, |v| v.len());
    if vectors.len() < 2 || d == 0 || vectors.iter().any(|v| v.len() != d) {
        return Err(Error::InvalidArgument(format!("PCA needs at least 2 vectors of one non-zero length (got {} vectors)", vectors.len())));
    }
    let n = vectors.len() as f64;
    let mean: Vec<f64> = (0..d).map(|j| vectors.iter().map(|v| v[j] as f64).sum::<f64>() / n).collect();
    let x: Vec<Vec<f64>> = vectors.iter().map(|v| v.iter().zip(&mean).map(|(&a, m)| a as f64 - m).collect()).collect();
    // Covariance (d, d).
    let mut cov = vec![0f64; d * d];
    for row in &x {
        for i in 0..d {
            for j in 0..d {
                cov[i * d + j] += row[i] * row[j] / n;
            }
        }
    }
    let total: f64 = (0..d).map(|i| cov[i * d + i]).sum::<f64>().max(1e-300);
    let eig = nalgebra::SymmetricEigen::new(nalgebra::DMatrix::from_row_slice(d, d, &cov));
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
    let mut comps: Vec<Vec<f64>> = Vec::new();
    let mut shares = [0.0; 2];
    for (k, share) in shares.iter_mut().enumerate() {
        // One vector has a single component: the second axis is then flat.
        let Some(&col) = order.get(k) else {
            comps.push(vec![0.0; d]);
            continue;
        };
        let mut v: Vec<f64> = eig.eigenvectors.column(col).iter().copied().collect();
        // An eigenvector's sign is arbitrary: fix it (largest entry positive) so that the same
        // vectors always give the same picture.
        let big = v.iter().copied().fold(0f64, |m, x| if x.abs() > m.abs() { x } else { m });
        if big < 0.0 {
            v.iter_mut().for_each(|x| *x = -*x);
        }
        *share = eig.eigenvalues[col].max(0.0) / total;
        comps.push(v);
    }
    let proj = |row: &Vec<f64>, c: &Vec<f64>| row.iter().zip(c).map(|(a, b)| a * b).sum::<f64>();
    Ok(Pca2d { points: x.iter().map(|row| (proj(row, &comps[0]), proj(row, &comps[1]))).collect(), shares })
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, points: &[(f64, f64)], labels: &[String], title: &str) -> Result<()> {
    root.fill(&WHITE).map_err(perr)?;
    let span = |f: fn(&(f64, f64)) -> f64| {
        let (lo, hi) = points.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let pad = ((hi - lo) * 0.08).max(1e-6);
        (lo - pad)..(hi + pad * 3.0)
    };
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 20))
        .margin(16)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(span(|p| p.0), span(|p| p.1))
        .map_err(perr)?;
    chart.configure_mesh().x_desc("PC 1").y_desc("PC 2").light_line_style(WHITE).draw().map_err(perr)?;
    let style = TextStyle::from((FAMILY, 13).into_font()).color(&BLACK);
    chart
        .draw_series(points.iter().zip(labels).map(|(&p, l)| {
            EmptyElement::at(p) + Circle::new((0, 0), 3, RGBColor(30, 80, 200).filled()) + Text::new(l.clone(), (5, -6), style.clone())
        }))
        .map_err(perr)?;
    Ok(())
}

/// Draws the vectors' PCA map, each point labelled, to `out` (`.png` or `.svg`).
pub fn plot_embedding(vectors: &[Vec<f32>], labels: &[String], title: &str, out: impl AsRef<Path>) -> Result<()> {
    if vectors.len() != labels.len() {
        return Err(Error::InvalidArgument(format!("{} vectors but {} labels", vectors.len(), labels.len())));
    }
    let Pca2d { points, shares } = pca_2d(vectors)?;
    let title = format!("{title} (PCA: {:.0} % + {:.0} % of the variance)", 100.0 * shares[0], 100.0 * shares[1]);
    render!(out.as_ref(), (1200, 900), draw(&points, labels, &title))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points on a tilted plane with a small third coordinate: PCA finds the plane's axes
    /// (the variance shares, and distances within the plane, are kept).
    #[test]
    fn pca_recovers_a_plane() {
        let (a, b) = ([0.6f32, 0.8, 0.0], [0.0f32, 0.0, 1.0]);
        let coords: Vec<(f32, f32)> = (0..40).map(|i| ((i as f32 * 0.37).sin() * 5.0, (i as f32 * 0.91).cos() * 2.0)).collect();
        let vecs: Vec<Vec<f32>> = coords
            .iter()
            .enumerate()
            .map(|(i, &(u, v))| (0..3).map(|k| u * a[k] + v * b[k] + 0.01 * ((i * k) % 3) as f32).collect())
            .collect();
        let Pca2d { points: pts, shares } = pca_2d(&vecs).unwrap();
        assert!(shares[0] > shares[1] && shares[0] + shares[1] > 0.999, "{shares:?}");
        let dist = |p: (f64, f64), q: (f64, f64)| ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
        for i in 1..coords.len() {
            let want = (((coords[i].0 - coords[0].0).powi(2) + (coords[i].1 - coords[0].1).powi(2)) as f64).sqrt();
            assert!((dist(pts[i], pts[0]) - want).abs() < 0.05, "point {i}");
        }
        assert!(pca_2d(&vecs[..1]).is_err());
    }

    #[test]
    fn draws_a_labelled_map() {
        let d = tempfile::tempdir().unwrap();
        let vecs: Vec<Vec<f32>> = (0..6).map(|i| vec![i as f32, (i * i) as f32, 1.0]).collect();
        let labels: Vec<String> = (0..6).map(|i| format!("phrase {i}")).collect();
        let out = d.path().join("map.png");
        plot_embedding(&vecs, &labels, "test", &out).unwrap();
        assert!(std::fs::metadata(&out).unwrap().len() > 1000);
        assert!(plot_embedding(&vecs, &labels[..2], "test", &out).is_err());
    }
}
