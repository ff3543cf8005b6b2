//! The SVG drawing of the charts, with plotters' SVG backend: every chart is a horizontal
//! "row chart" (one row per labelled item, the value on the x axis), so long cell labels sit
//! on the left instead of overlapping under the bars. Text is written as SVG `<text>` elements
//! and laid out by plotters' built-in width estimate (no font files, no system font library);
//! sizes, colours and number formats are fixed, so the same chart is the same bytes.

use super::{BarChart, DistributionChart, IntervalChart, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The font family written into every `<text>`.
const FONT: &str = "sans-serif";
/// Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), cycled.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x55, 0x55, 0x55),
];
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const MUTED: RGBColor = RGBColor(0x66, 0x66, 0x66);
const GRID: RGBColor = RGBColor(0xDD, 0xDD, 0xDD);

/// Pixel sizes of the text.
const TITLE_PX: f64 = 16.0;
const LABEL_PX: f64 = 12.0;
const NOTE_PX: f64 = 11.0;
/// Labels longer than this are cut with `…`.
const MAX_LABEL_CHARS: usize = 56;
/// A row's strip points are drawn only up to this many values (the box is always drawn).
pub(super) const MAX_STRIP_POINTS: usize = 300;

/// The colour of series (or row) `i`.
fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A text style of `px` pixels. plotters' SVG backend writes `font-size` as the size given
/// divided by 1.24, so the size asked for is scaled up by that factor.
fn text(px: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, px * 1.24).into_font().color(&color).pos(Pos::new(h, v))
}

/// An estimate of a text's width in pixels at `px`, generous for a proportional sans-serif
/// font (wide enough for upper case and digits), so labels never run into the plot.
fn text_width(s: &str, px: f64) -> i32 {
    (s.chars().count() as f64 * px * 0.62).ceil() as i32
}

/// `s` cut to [`MAX_LABEL_CHARS`] characters.
fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL_CHARS {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(MAX_LABEL_CHARS - 1).collect::<String>())
    }
}

/// A number with `digits` decimals, `–` when undefined: the report's one number format.
fn num(v: Option<f64>, digits: u8) -> String {
    crate::analysis::format_number(v, Some(digits))
}

/// Decimals for the x axis's tick labels: enough to tell ticks about a fifth of the range apart.
fn tick_digits(lo: f64, hi: f64) -> usize {
    let step = (hi - lo) / 5.0;
    if !(step.is_finite() && step > 0.0) {
        return 2;
    }
    (-step.log10().floor()).clamp(0.0, 4.0) as usize
}

/// A "nice" upper bound at or above `v`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_ceil(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|c| *c >= v * (1.0 - 1e-9)).unwrap_or(10.0 * magnitude)
}

/// The x range: the chart's own, or from 0 (or the smallest value, when negative) to a nice
/// bound above the largest value.
fn x_range(fixed: Option<(f64, f64)>, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some((lo, hi)) = fixed.filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && hi > lo) {
        return (lo, hi);
    }
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let hi = if hi > 0.0 { nice_ceil(hi) } else { 0.0 };
    let lo = if lo < 0.0 { -nice_ceil(-lo) } else { 0.0 };
    if hi > lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// The layout every row chart shares: a title and a note on top, labels on the left,
/// annotations on the right, the x axis below, then a legend.
struct Frame<'t> {
    title: &'t str,
    note: &'t str,
    x_label: &'t str,
    /// One label per row, top to bottom.
    labels: Vec<String>,
    /// One annotation per row (right of the plot).
    annotations: Vec<String>,
    /// Room kept right of the plot for text the marks write past their end (bar values).
    overhang_px: i32,
    row_px: i32,
    legend: Vec<String>,
    range: (f64, f64),
}

/// Where the frame put things, for the chart's own drawing.
struct Placed {
    /// Plot area in pixels: left, top, right, bottom.
    left: i32,
    top: i32,
    right: i32,
    row_px: i32,
    range: (f64, f64),
}

impl Placed {
    /// The pixel x of a value.
    fn x(&self, v: f64) -> i32 {
        let (lo, hi) = self.range;
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        self.left + (t * f64::from(self.right - self.left)).round() as i32
    }

    /// The pixel y of row `i`'s centre.
    fn row_y(&self, i: usize) -> i32 {
        self.top + self.row_px * i as i32 + self.row_px / 2
    }
}

const PAD: i32 = 14;
const PLOT_MIN_PX: i32 = 360;
const AXIS_PX: i32 = 44;
const LEGEND_ROW_PX: i32 = 18;

impl Frame<'_> {
    fn header_px(&self) -> i32 {
        if self.note.is_empty() {
            36
        } else {
            54
        }
    }

    fn label_px(&self) -> i32 {
        self.labels.iter().map(|l| text_width(&clip(l), LABEL_PX)).max().unwrap_or(0).clamp(40, 420) + 10
    }

    fn annotation_px(&self) -> i32 {
        self.annotations.iter().map(|a| text_width(a, NOTE_PX)).max().unwrap_or(0).max(self.overhang_px) + 12
    }

    fn size(&self) -> (u32, u32) {
        let width = (PAD + self.label_px() + PLOT_MIN_PX + self.annotation_px() + PAD)
            .max(text_width(self.title, TITLE_PX) + 2 * PAD)
            .max(text_width(self.note, NOTE_PX) + 2 * PAD)
            .max(720);
        let rows = self.labels.len().max(1) as i32;
        let legend = if self.legend.is_empty() { 0 } else { 8 + LEGEND_ROW_PX * self.legend.len() as i32 };
        let height = self.header_px() + rows * self.row_px + AXIS_PX + legend + PAD;
        (width as u32, height as u32)
    }

    /// Draws the title, note, row labels, annotations, the x axis with its grid, and the
    /// legend; returns where the plot area is.
    fn draw(&self, root: &Area<'_>) -> Result<Placed, PlotError> {
        let (width, _) = self.size();
        root.fill(&WHITE).map_err(draw_err)?;
        root.draw(&Text::new(self.title.to_string(), (PAD, 10), text(TITLE_PX, INK, HPos::Left, VPos::Top))).map_err(draw_err)?;
        if !self.note.is_empty() {
            root.draw(&Text::new(self.note.to_string(), (PAD, 32), text(NOTE_PX, MUTED, HPos::Left, VPos::Top))).map_err(draw_err)?;
        }
        let left = PAD + self.label_px();
        let right = width as i32 - PAD - self.annotation_px();
        let top = self.header_px();
        let rows = self.labels.len().max(1) as i32;
        let bottom = top + rows * self.row_px;
        let placed = Placed { left, top, right, row_px: self.row_px, range: self.range };

        // The x axis: a grid line and a label at each tick, through plotters' mesh.
        let plot = root.clone().shrink((left, top), ((right - left) as u32, (bottom - top + AXIS_PX) as u32));
        let (lo, hi) = self.range;
        let digits = tick_digits(lo, hi);
        let mut chart = ChartBuilder::on(&plot).x_label_area_size(AXIS_PX).build_cartesian_2d(lo..hi, 0f64..1f64).map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .y_labels(0)
            .x_labels(6)
            .x_label_formatter(&|v| format!("{:.digits$}", if v.abs() < (hi - lo) * 1e-9 { 0.0 } else { *v }))
            .x_desc(self.x_label)
            .label_style(text(NOTE_PX, MUTED, HPos::Center, VPos::Top))
            .axis_desc_style(text(NOTE_PX, MUTED, HPos::Center, VPos::Top))
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .axis_style(MUTED)
            .draw()
            .map_err(draw_err)?;
        if lo < 0.0 && hi > 0.0 {
            let x = placed.x(0.0);
            root.draw(&PathElement::new(vec![(x, top), (x, bottom)], MUTED.stroke_width(1))).map_err(draw_err)?;
        }

        for (i, label) in self.labels.iter().enumerate() {
            root.draw(&Text::new(clip(label), (left - 8, placed.row_y(i)), text(LABEL_PX, INK, HPos::Right, VPos::Center))).map_err(draw_err)?;
        }
        for (i, note) in self.annotations.iter().enumerate() {
            root.draw(&Text::new(note.clone(), (right + 8, placed.row_y(i)), text(NOTE_PX, MUTED, HPos::Left, VPos::Center))).map_err(draw_err)?;
        }
        let legend_top = bottom + AXIS_PX + 8;
        for (i, name) in self.legend.iter().enumerate() {
            let y = legend_top + LEGEND_ROW_PX * i as i32;
            root.draw(&Rectangle::new([(left, y + 3), (left + 12, y + 15)], color(i).filled())).map_err(draw_err)?;
            root.draw(&Text::new(clip(name), (left + 18, y + 9), text(LABEL_PX, INK, HPos::Left, VPos::Center))).map_err(draw_err)?;
        }
        Ok(placed)
    }
}

/// Renders a frame and the chart's marks into an SVG document.
fn render(frame: &Frame<'_>, marks: impl FnOnce(&Area<'_>, &Placed) -> Result<(), PlotError>) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, frame.size()).into_drawing_area();
        let placed = frame.draw(&root)?;
        marks(&root, &placed)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// A value with its interval: points with whiskers, one row per point.
pub(super) fn interval(chart: &IntervalChart) -> Result<String, PlotError> {
    let values = chart.points.iter().flat_map(|p| [p.value, p.low, p.high]).flatten();
    let frame = Frame {
        title: &chart.title,
        note: &chart.interval,
        x_label: &chart.x_label,
        labels: chart.points.iter().map(|p| p.label.clone()).collect(),
        annotations: chart
            .points
            .iter()
            .map(|p| match (p.low, p.high) {
                (Some(l), Some(h)) if p.value.is_some() => {
                    format!("{} [{}, {}]", num(p.value, chart.digits), num(Some(l), chart.digits), num(Some(h), chart.digits))
                }
                _ => num(p.value, chart.digits),
            })
            .collect(),
        overhang_px: 0,
        row_px: 30,
        legend: Vec::new(),
        range: x_range(chart.range, values),
    };
    render(&frame, |root, at| {
        for (i, p) in chart.points.iter().enumerate() {
            let y = at.row_y(i);
            let c = color(0);
            if let (Some(l), Some(h)) = (p.low, p.high) {
                let (xl, xh) = (at.x(l), at.x(h));
                root.draw(&PathElement::new(vec![(xl, y), (xh, y)], c.stroke_width(2))).map_err(draw_err)?;
                for x in [xl, xh] {
                    root.draw(&PathElement::new(vec![(x, y - 6), (x, y + 6)], c.stroke_width(2))).map_err(draw_err)?;
                }
            }
            if let Some(v) = p.value.filter(|v| v.is_finite()) {
                root.draw(&Circle::new((at.x(v), y), 5, c.filled())).map_err(draw_err)?;
            }
        }
        Ok(())
    })
}

/// The value written at the end of each bar.
fn values_text(chart: &BarChart) -> impl Iterator<Item = String> + '_ {
    chart.series.iter().flat_map(|s| s.values.iter().map(|v| num(*v, chart.digits)))
}

/// Grouped bars: one row per group, one bar per series inside it (none for 0 or undefined;
/// the value is written either way), a legend of the series.
pub(super) fn bars(chart: &BarChart) -> Result<String, PlotError> {
    let series = chart.series.len().max(1);
    let bar_px = 14;
    let values = chart.series.iter().flat_map(|s| s.values.iter().copied()).flatten();
    let frame = Frame {
        title: &chart.title,
        note: &chart.note,
        x_label: &chart.x_label,
        labels: chart.groups.clone(),
        annotations: Vec::new(),
        overhang_px: values_text(chart).map(|t| text_width(&t, NOTE_PX)).max().unwrap_or(0) + 4,
        row_px: bar_px * series as i32 + 12,
        legend: chart.series.iter().map(|s| s.name.clone()).collect(),
        range: x_range(chart.range, values),
    };
    render(&frame, |root, at| {
        for g in 0..chart.groups.len() {
            let top = at.top + at.row_px * g as i32 + 6;
            for (s, serie) in chart.series.iter().enumerate() {
                let y0 = top + bar_px * s as i32;
                let value = serie.values.get(g).copied().flatten().filter(|v| v.is_finite());
                let end = match value {
                    Some(v) if v != 0.0 => {
                        let (x0, x1) = (at.x(0f64.max(at.range.0)), at.x(v));
                        let (a, b) = if x1 >= x0 { (x0, x1) } else { (x1, x0) };
                        root.draw(&Rectangle::new([(a, y0 + 1), (b.max(a + 1), y0 + bar_px - 1)], color(s).filled())).map_err(draw_err)?;
                        x1.max(x0)
                    }
                    _ => at.x(0f64.max(at.range.0)),
                };
                root.draw(&Text::new(num(value, chart.digits), (end + 4, y0 + bar_px / 2), text(NOTE_PX - 1.0, MUTED, HPos::Left, VPos::Center)))
                    .map_err(draw_err)?;
            }
        }
        Ok(())
    })
}

/// Quartiles (linear interpolation between the order statistics, as R's type 7 and numpy's
/// default) of sorted values.
pub(super) fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let (i, frac) = (h.floor() as usize, h - h.floor());
    let next = sorted.get(i + 1).copied().unwrap_or(sorted[i]);
    Some(sorted[i] + frac * (next - sorted[i]))
}

/// Box-and-strip rows: quartile box, median line, whiskers to the minimum and maximum, and
/// every value as a dot (spread vertically by a fixed pattern, so identical values show).
pub(super) fn distributions(chart: &DistributionChart) -> Result<String, PlotError> {
    let sorted: Vec<Vec<f64>> = chart
        .distributions
        .iter()
        .map(|d| {
            let mut v: Vec<f64> = d.values.iter().copied().filter(|v| v.is_finite()).collect();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let frame = Frame {
        title: &chart.title,
        note: &chart.note,
        x_label: &chart.x_label,
        labels: chart.distributions.iter().map(|d| d.label.clone()).collect(),
        annotations: sorted
            .iter()
            .map(|v| if v.is_empty() { "no values".to_string() } else { format!("median {} · n {}", num(quantile(v, 0.5), chart.digits), v.len()) })
            .collect(),
        overhang_px: 0,
        row_px: 34,
        legend: Vec::new(),
        range: x_range(chart.range, sorted.iter().flatten().copied()),
    };
    render(&frame, |root, at| {
        for (i, v) in sorted.iter().enumerate() {
            let (Some(min), Some(q1), Some(med), Some(q3), Some(max)) =
                (v.first().copied(), quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75), v.last().copied())
            else {
                continue;
            };
            let y = at.row_y(i);
            let c = color(i);
            let half = 9;
            root.draw(&PathElement::new(vec![(at.x(min), y), (at.x(q1), y)], MUTED.stroke_width(1))).map_err(draw_err)?;
            root.draw(&PathElement::new(vec![(at.x(q3), y), (at.x(max), y)], MUTED.stroke_width(1))).map_err(draw_err)?;
            for x in [at.x(min), at.x(max)] {
                root.draw(&PathElement::new(vec![(x, y - 5), (x, y + 5)], MUTED.stroke_width(1))).map_err(draw_err)?;
            }
            let (b0, b1) = (at.x(q1), at.x(q3).max(at.x(q1) + 1));
            root.draw(&Rectangle::new([(b0, y - half), (b1, y + half)], c.mix(0.18).filled())).map_err(draw_err)?;
            root.draw(&Rectangle::new([(b0, y - half), (b1, y + half)], c.stroke_width(1))).map_err(draw_err)?;
            let xm = at.x(med);
            root.draw(&PathElement::new(vec![(xm, y - half), (xm, y + half)], c.stroke_width(2))).map_err(draw_err)?;
            if v.len() <= MAX_STRIP_POINTS {
                for (k, value) in v.iter().enumerate() {
                    let dy = (k * 7 % 11) as i32 - 5;
                    root.draw(&Circle::new((at.x(*value), y + dy), 2, c.mix(0.6).filled())).map_err(draw_err)?;
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_ticks_are_nice_numbers() {
        assert_eq!(nice_ceil(0.87), 1.0);
        assert_eq!(nice_ceil(13.0), 20.0);
        assert_eq!(nice_ceil(2.2), 2.5);
        assert_eq!(nice_ceil(40.0), 50.0);
        assert_eq!(x_range(None, [0.2, 3.1].into_iter()), (0.0, 5.0));
        assert_eq!(x_range(None, [-0.3, 0.1].into_iter()), (-0.5, 0.1));
        assert_eq!(x_range(None, std::iter::empty()), (0.0, 1.0));
        assert_eq!(x_range(Some((0.0, 1.0)), [7.0].into_iter()), (0.0, 1.0));
        assert_eq!(tick_digits(0.0, 1.0), 1);
        assert_eq!(tick_digits(0.0, 50.0), 0);
        assert_eq!(tick_digits(0.0, 0.01), 3);
    }

    #[test]
    fn quartiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 0.25), Some(1.75));
        assert_eq!(quantile(&v, 0.75), Some(3.25));
        assert_eq!(quantile(&[5.0], 0.25), Some(5.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn long_labels_are_cut() {
        let long = "x".repeat(80);
        assert_eq!(clip(&long).chars().count(), MAX_LABEL_CHARS);
        assert!(clip(&long).ends_with('…'));
        assert_eq!(clip("short"), "short");
    }
}
