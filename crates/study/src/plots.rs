//! The study's SVG plots, drawn with plotters: grouped bars of a quantity per kernel and
//! pipeline, box plots of a quantity grouped by a column (the style of Reissmann et al.'s
//! Figure 6), a scatter of a static quantity before (the baseline, x) and after (each
//! pipeline, y) with the diagonal (their Figure 8), and lines of the geometric mean over
//! kernels along a swept machine parameter (geometric for speedups, arithmetic for
//! counts).
//!
//! Grids have a line at each labelled value only: plotters' default of ten fainter lines
//! between labels made drawing the grid most of a small study's whole cost of plotting.
//!
//! Every series has a legend entry naming it (the pipeline, or the group), so a plot's
//! SVG names the series it draws. The drawing depends only on the rows' metrics, never
//! on timings, so a study's plots are the same byte for byte however it was run.

use crate::plan::Plot;
use crate::summary::{geomean, Results};
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;

/// The size of every plot, in pixels.
const SIZE: (u32, u32) = (960, 600);

/// Draws `plot` and returns the SVG text.
pub fn draw(results: &Results<'_>, plot: &Plot) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        match plot.kind.as_str() {
            "bars" => bars(results, plot, &root)?,
            "box" => boxes(results, plot, &root)?,
            "scatter" => scatter(results, plot, &root)?,
            "lines" => lines(results, plot, &root)?,
            other => return Err(anyhow!("unknown kind of plot {other}")),
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a plot: {e:?}")
}

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// How values of `metric` over kernels (and machines) combine into one: the geometric
/// mean for speedups, which are ratios, and the arithmetic mean for the other metrics,
/// which are counts (often zero, which a geometric mean cannot take).
fn aggregate(metric: &str, values: impl Iterator<Item = f64>) -> Option<f64> {
    if metric == crate::rows::SPEEDUP {
        return geomean(values);
    }
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// What [`aggregate`] takes, for axis titles.
fn aggregate_name(metric: &str) -> &'static str {
    if metric == crate::rows::SPEEDUP {
        "geomean"
    } else {
        "mean"
    }
}

/// The upper end of an axis showing values up to `max`, with room for the legend.
fn top(max: f64) -> f64 {
    if max > 0.0 {
        max * 1.25
    } else {
        1.0
    }
}

/// Grouped bars: kernels on x, one bar per pipeline, the quantity combined over the
/// plot's machines by [`aggregate`].
fn bars(
    results: &Results<'_>,
    plot: &Plot,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<()> {
    let meta = results.meta;
    let nk = meta.kernels.len();
    let values: Vec<Vec<Option<f64>>> = plot
        .pipelines
        .iter()
        .map(|&p| {
            (0..nk)
                .map(|k| {
                    aggregate(
                        &plot.metric,
                        plot.machines
                            .iter()
                            .filter_map(|&m| results.value(&plot.metric, k, p, m)),
                    )
                })
                .collect()
        })
        .collect();
    let max = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(140)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..nk.max(1) as f64, 0f64..top(max))
        .map_err(err)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(plot.metric.as_str())
        .draw()
        .map_err(err)?;
    let n = plot.pipelines.len().max(1) as f64;
    let width = 0.8 / n;
    for (s, (&p, vals)) in plot.pipelines.iter().zip(&values).enumerate() {
        let c = colour(s);
        chart
            .draw_series(vals.iter().enumerate().filter_map(|(k, v)| {
                let v = (*v)?;
                let x0 = k as f64 + 0.1 + s as f64 * width;
                Some(Rectangle::new([(x0, 0.0), (x0 + width, v)], c.filled()))
            }))
            .map_err(err)?
            .label(meta.pipelines[p].label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
    }
    if plot.metric == crate::rows::SPEEDUP {
        chart
            .draw_series(LineSeries::new(
                [(0.0, 1.0), (nk as f64, 1.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
    }
    // The kernels' names under their groups, turned to read upwards.
    let style = TextStyle::from(
        ("sans-serif", 13)
            .into_font()
            .transform(FontTransform::Rotate270),
    )
    .pos(Pos::new(HPos::Right, VPos::Center));
    let area = chart.plotting_area();
    for (k, name) in meta.kernels.iter().enumerate() {
        let (x, y) = area.map_coordinate(&(k as f64 + 0.5, 0.0));
        root.draw(&Text::new(name.clone(), (x, y + 8), style.clone()))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The value of `column` for a run.
fn group_of(results: &Results<'_>, column: &str, k: usize, p: usize, m: usize) -> String {
    let meta = results.meta;
    match column {
        "pipeline" => meta.pipelines[p].label.clone(),
        "kernel" => meta.kernels[k].clone(),
        "machine" => meta.machines[m].label.clone(),
        param => meta.machines[m]
            .params
            .get(param)
            .cloned()
            .unwrap_or_default(),
    }
}

/// Box plots of the quantity over the runs of each group.
fn boxes(
    results: &Results<'_>,
    plot: &Plot,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<()> {
    let meta = results.meta;
    let column = plot.group_by.as_deref().unwrap_or("pipeline");
    // Groups in the order they first appear, so pipelines keep the spec's order.
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for &m in &plot.machines {
        for &p in &plot.pipelines {
            for k in 0..meta.kernels.len() {
                if let Some(v) = results.value(&plot.metric, k, p, m) {
                    let g = group_of(results, column, k, p, m);
                    if !groups.contains_key(&g) {
                        order.push(g.clone());
                    }
                    groups.entry(g).or_default().push(v);
                }
            }
        }
    }
    if column != "pipeline" {
        order.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.total_cmp(&y),
            _ => a.cmp(b),
        });
    }
    let max = groups.values().flatten().copied().fold(0.0, f64::max);
    let n = order.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n, 0f64..top(max))
        .map_err(err)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(plot.metric.as_str())
        .draw()
        .map_err(err)?;
    for (i, g) in order.iter().enumerate() {
        let c = colour(i);
        let b = BoxStats::new(&groups[g]);
        let (x0, x1, xm) = (i as f64 + 0.3, i as f64 + 0.7, i as f64 + 0.5);
        let stroke = c.stroke_width(2);
        chart
            .draw_series([Rectangle::new([(x0, b.q1), (x1, b.q3)], stroke)])
            .map_err(err)?
            .label(g.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], stroke));
        let lines = [
            vec![(x0, b.median), (x1, b.median)],
            vec![(xm, b.q3), (xm, b.high)],
            vec![(xm, b.q1), (xm, b.low)],
            vec![(xm - 0.1, b.high), (xm + 0.1, b.high)],
            vec![(xm - 0.1, b.low), (xm + 0.1, b.low)],
        ];
        chart
            .draw_series(lines.into_iter().map(|l| PathElement::new(l, stroke)))
            .map_err(err)?;
        chart
            .draw_series(
                b.outliers
                    .iter()
                    .map(|&v| Circle::new((xm, v), 2, c.filled())),
            )
            .map_err(err)?;
    }
    let area = chart.plotting_area();
    let style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, g) in order.iter().enumerate() {
        let (x, y) = area.map_coordinate(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(g.clone(), (x, y + 6), style.clone()))
            .map_err(err)?;
    }
    let (x, y) = area.map_coordinate(&(n / 2.0, 0.0));
    root.draw(&Text::new(column.to_string(), (x, y + 28), style))
        .map_err(err)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// A box plot's numbers: quartiles, whiskers at the most extreme values within 1.5
/// interquartile ranges of the box (Tukey's), and the values beyond them.
struct BoxStats {
    q1: f64,
    median: f64,
    q3: f64,
    low: f64,
    high: f64,
    outliers: Vec<f64>,
}

impl BoxStats {
    fn new(values: &[f64]) -> BoxStats {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        // Linear interpolation between closest ranks.
        let quantile = |q: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let pos = q * (v.len() - 1) as f64;
            let (i, frac) = (pos.floor() as usize, pos.fract());
            let next = v[(i + 1).min(v.len() - 1)];
            v[i] + (next - v[i]) * frac
        };
        let (q1, median, q3) = (quantile(0.25), quantile(0.5), quantile(0.75));
        let iqr = q3 - q1;
        let (lo_fence, hi_fence) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let inside = || {
            v.iter()
                .copied()
                .filter(|&x| x >= lo_fence && x <= hi_fence)
        };
        BoxStats {
            q1,
            median,
            q3,
            low: inside().fold(q1, f64::min),
            high: inside().fold(q3, f64::max),
            outliers: v
                .iter()
                .copied()
                .filter(|&x| x < lo_fence || x > hi_fence)
                .collect(),
        }
    }
}

/// The baseline's quantity (x) against each pipeline's (y), one point per kernel and
/// machine, with the diagonal.
fn scatter(
    results: &Results<'_>,
    plot: &Plot,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<()> {
    let meta = results.meta;
    let b = meta.baseline;
    let points: Vec<Vec<(f64, f64)>> = plot
        .pipelines
        .iter()
        .map(|&p| {
            plot.machines
                .iter()
                .flat_map(|&m| (0..meta.kernels.len()).map(move |k| (k, m)))
                .filter_map(|(k, m)| {
                    Some((
                        results.value(&plot.metric, k, b, m)?,
                        results.value(&plot.metric, k, p, m)?,
                    ))
                })
                .collect()
        })
        .collect();
    let max = points
        .iter()
        .flatten()
        .flat_map(|&(x, y)| [x, y])
        .fold(0.0, f64::max);
    let end = top(max);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..end, 0f64..end)
        .map_err(err)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(format!("{} ({})", plot.metric, meta.pipelines[b].label))
        .y_desc(format!("{} (pipeline)", plot.metric))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (end, end)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(err)?;
    for (s, (&p, pts)) in plot.pipelines.iter().zip(&points).enumerate() {
        let c = colour(s);
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 4, c.filled())))
            .map_err(err)?
            .label(meta.pipelines[p].label.as_str())
            .legend(move |(x, y)| Circle::new((x + 5, y), 4, c.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The quantity along a swept parameter, combined by [`aggregate`] over kernels (and the
/// machines of the other parameters' values), one line per pipeline.
fn lines(
    results: &Results<'_>,
    plot: &Plot,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<()> {
    let meta = results.meta;
    let x_param = plot.x.as_deref().unwrap_or_default();
    let mut xs: Vec<String> = Vec::new();
    for &m in &plot.machines {
        let v = meta.machines[m]
            .params
            .get(x_param)
            .cloned()
            .unwrap_or_default();
        if !xs.contains(&v) {
            xs.push(v);
        }
    }
    let numeric: Option<Vec<f64>> = xs.iter().map(|x| x.parse::<f64>().ok()).collect();
    let positions: Vec<f64> = match &numeric {
        Some(v) => v.clone(),
        None => (0..xs.len()).map(|i| i as f64).collect(),
    };
    let series: Vec<Vec<(f64, f64)>> = plot
        .pipelines
        .iter()
        .map(|&p| {
            let mut pts: Vec<(f64, f64)> = xs
                .iter()
                .zip(&positions)
                .filter_map(|(x, &pos)| {
                    let vals = plot
                        .machines
                        .iter()
                        .filter(|&&m| meta.machines[m].params.get(x_param) == Some(x))
                        .flat_map(|&m| (0..meta.kernels.len()).map(move |k| (k, m)))
                        .filter_map(|(k, m)| results.value(&plot.metric, k, p, m));
                    Some((pos, aggregate(&plot.metric, vals)?))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        })
        .collect();
    let (lo, hi) = positions
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (lo.min(0.0), lo.max(0.0) + 1.0)
    };
    let pad = (hi - lo) * 0.05;
    let max = series.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(lo - pad..hi + pad, 0f64..top(max))
        .map_err(err)?;
    let names = xs.clone();
    let categorical = numeric.is_none();
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(x_param)
        .y_desc(format!(
            "{} ({} over kernels)",
            plot.metric,
            aggregate_name(&plot.metric)
        ))
        .x_label_formatter(&|v| {
            if categorical {
                let i = v.round();
                if (v - i).abs() < 1e-9 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            } else {
                format!("{v}")
            }
        })
        .draw()
        .map_err(err)?;
    for (s, (&p, pts)) in plot.pipelines.iter().zip(&series).enumerate() {
        let c = colour(s);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(err)?
            .label(meta.pipelines[p].label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 3, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_have_tukey_whiskers() {
        let b = BoxStats::new(&[1.0, 2.0, 3.0, 4.0, 5.0, 100.0]);
        assert_eq!((b.q1, b.median, b.q3), (2.25, 3.5, 4.75));
        assert_eq!((b.low, b.high), (1.0, 5.0));
        assert_eq!(b.outliers, vec![100.0]);
        let b = BoxStats::new(&[0.0, 0.0, 0.0, 7.0]);
        assert_eq!((b.q3, b.high, b.outliers.clone()), (1.75, 1.75, vec![7.0]));
    }
}
