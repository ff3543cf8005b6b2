//! What a chart shows, as plain data an analysis fills from its own results: a value per item
//! with its interval ([`IntervalChart`]), grouped bars ([`BarChart`]), or many values per item
//! ([`DistributionChart`]). Each analysis kind declares the charts it draws (its definition's
//! `charts`) from its `data` and the cells around it ([`ChartCells`]); the report layer draws
//! them as SVG beside RESULTS.md. The same data gives the same chart: items in the order given,
//! nothing random.

/// A chart with more marks than this (rows of an interval or distribution chart, bars of a
/// bar chart) is not drawn: nobody reads 100,000 bars, and its SVG would run to hundreds of
/// megabytes. RESULTS.md says so where the chart would be; the values are in results.json.
pub const MAX_CHART_MARKS: usize = 2_000;

/// One item of an [`IntervalChart`]: a value with an optional interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalPoint {
    pub label: String,
    /// `None`: undefined (drawn as `–`, no point).
    pub value: Option<f64>,
    /// The interval's bounds; both `None` for a value without an interval.
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// A value per item with whiskers for its interval, one row per item, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalChart {
    pub title: String,
    /// What the whiskers are, shown under the title (`Wilson 95 % interval …`); may be empty.
    pub interval: String,
    /// The x axis's caption.
    pub x_label: String,
    pub points: Vec<IntervalPoint>,
    /// A fixed x range (`(0, 1)` for a rate); `None`: from the data, always including 0.
    pub range: Option<(f64, f64)>,
    /// Decimals of the values written beside each row.
    pub digits: u8,
}

/// One series of a [`BarChart`]: a value per group (`None`: undefined, no bar).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// Grouped horizontal bars: one row per group, one bar per series in it, and a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    /// Shown under the title; may be empty.
    pub note: String,
    pub x_label: String,
    pub groups: Vec<String>,
    pub series: Vec<Series>,
    /// A fixed x range; `None`: from 0 to a round number above the largest value.
    pub range: Option<(f64, f64)>,
    /// Decimals of the value written at the end of each bar.
    pub digits: u8,
}

/// The values of one item of a [`DistributionChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub label: String,
    pub values: Vec<f64>,
}

/// A box-and-strip plot per item: quartile box, median, whiskers to the extremes, every value
/// as a dot (up to 300 per item).
#[derive(Debug, Clone, PartialEq)]
pub struct DistributionChart {
    pub title: String,
    pub note: String,
    pub x_label: String,
    pub distributions: Vec<Distribution>,
    pub range: Option<(f64, f64)>,
    /// Decimals of the median written beside each row.
    pub digits: u8,
}

/// A chart of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Interval(IntervalChart),
    Bars(BarChart),
    Distribution(DistributionChart),
    /// A chart of more marks than are drawn ([`MAX_CHART_MARKS`]): its title and mark count
    /// only, so an undrawable chart holds no data.
    TooLarge {
        title: String,
        marks: usize,
    },
}

impl Chart {
    pub fn title(&self) -> &str {
        match self {
            Self::Interval(c) => &c.title,
            Self::Bars(c) => &c.title,
            Self::Distribution(c) => &c.title,
            Self::TooLarge { title, .. } => title,
        }
    }

    /// The chart itself when it is drawn; its title and mark count otherwise.
    pub fn or_too_large(self) -> Self {
        if self.drawn() {
            self
        } else {
            Self::TooLarge { title: self.title().to_string(), marks: self.marks() }
        }
    }

    /// How many marks it draws: an interval or distribution chart's rows, a bar chart's bars.
    pub fn marks(&self) -> usize {
        match self {
            Self::Interval(c) => c.points.len(),
            Self::Bars(c) => c.groups.len() * c.series.len(),
            Self::Distribution(c) => c.distributions.len(),
            Self::TooLarge { marks, .. } => *marks,
        }
    }

    /// Whether it is drawn (see [`MAX_CHART_MARKS`]).
    pub fn drawn(&self) -> bool {
        self.marks() <= MAX_CHART_MARKS
    }
}

/// A chart an analysis asks for, with the short name its file is called by.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    /// Lower-case letters, digits and `-`: `seconds`, `category`.
    pub name: &'static str,
    pub chart: Chart,
}

/// What a chart knows of the cells beyond an analysis's own data: their labels and the runs'
/// seconds. The report layer answers from the results model, so any results.json can be charted
/// again.
pub trait ChartCells {
    /// A cell's label in a chart: the values of the axes that vary (`gemma3-270m,
    /// rag_symbol_max_definitions=5`), or the text itself when it names no cell.
    fn label(&self, cell: &str) -> String;
    /// How many cells the results hold.
    fn count(&self) -> usize;
    /// Whether any run has a result with its seconds.
    fn any_run_seconds(&self) -> bool;
    /// Each cell's label in matrix order, with the seconds of its runs that have a result.
    fn run_seconds(&self) -> Vec<(String, Vec<f64>)>;
}

/// The Wilson score interval of `successes` out of `n` at 95 % (z = 1.959964); `None` when
/// `n` is 0.
pub fn wilson(successes: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (k, n) = (successes as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}
