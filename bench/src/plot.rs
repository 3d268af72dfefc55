//! The picture of a run (issue 17): the cost curve (four log-log charts of the figures per
//! handoff against the queue's depth, one line per implementation) and the table of targets
//! with their measured ratios, as one self-contained SVG (no plotting dependency: a few lines
//! and texts are all it needs).

use std::fmt::Write;

use serde_json::Value;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// One line of a chart: a label and its (x, y) points.
type Series = (String, Vec<(f64, f64)>);

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The decades covering `lo..=hi` (at least one).
fn decades(lo: f64, hi: f64) -> (i32, i32) {
    let a = lo.max(1e-9).log10().floor() as i32;
    let b = hi.max(1e-9).log10().ceil() as i32;
    (a, b.max(a + 1))
}

fn tick_label(exp: i32) -> String {
    let v = 10f64.powi(exp);
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else if v >= 1.0 {
        format!("{v}")
    } else {
        format!("{v:.0e}")
    }
}

/// A log-log chart at (x, y) of size (w, h).
fn chart(svg: &mut String, (x, y, w, h): (f64, f64, f64, f64), title: &str, series: &[Series]) {
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut xlo, mut xhi, mut ylo, mut yhi) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(px, py) in pts.filter(|(px, py)| *px > 0.0 && *py > 0.0) {
        xlo = xlo.min(px);
        xhi = xhi.max(px);
        ylo = ylo.min(py);
        yhi = yhi.max(py);
    }
    let (px0, py0, pw, ph) = (x + 60.0, y + 30.0, w - 80.0, h - 70.0);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>"#,
        x + 10.0,
        y + 18.0,
        esc(title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{px0}" y="{py0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
    );
    if xlo > xhi {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="12">not measured</text>"#,
            px0 + 10.0,
            py0 + 20.0
        );
        return;
    }
    let (xa, xb) = decades(xlo, xhi);
    let (ya, yb) = decades(ylo, yhi);
    let sx = |v: f64| px0 + (v.log10() - xa as f64) / (xb - xa) as f64 * pw;
    let sy = |v: f64| py0 + ph - (v.log10() - ya as f64) / (yb - ya) as f64 * ph;
    for e in xa..=xb {
        let gx = sx(10f64.powi(e));
        let _ = writeln!(
            svg,
            r##"<line x1="{gx}" y1="{py0}" x2="{gx}" y2="{}" stroke="#ddd"/><text x="{gx}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            py0 + ph,
            py0 + ph + 14.0,
            tick_label(e)
        );
    }
    for e in ya..=yb {
        let gy = sy(10f64.powi(e));
        let _ = writeln!(
            svg,
            r##"<line x1="{px0}" y1="{gy}" x2="{}" y2="{gy}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"##,
            px0 + pw,
            px0 - 4.0,
            gy + 4.0,
            tick_label(e)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">waiters queued (depth)</text>"#,
        px0 + pw / 2.0,
        py0 + ph + 30.0
    );
    for (i, (label, points)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = points
            .iter()
            .filter(|(px, py)| *px > 0.0 && *py > 0.0)
            .map(|&(px, py)| format!("{:.1},{:.1}", sx(px), sy(py)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for p in &path {
            let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(svg, r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>"#);
        }
        let ly = py0 + 14.0 + i as f64 * 14.0;
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{ly}" font-size="11" fill="{color}">{}</text>"#,
            px0 + 8.0,
            esc(label)
        );
    }
}

/// The SVG of a run's results (the JSON `zkbench orchestrate` writes).
pub fn svg(results: &Value) -> String {
    let (width, chart_h) = (1000.0, 260.0);
    let targets: Vec<&Value> = results["targets"]
        .as_array()
        .map(|t| t.iter().filter(|t| !t["measured"].is_null()).collect())
        .unwrap_or_default();
    let table_y = 60.0 + 2.0 * chart_h + 20.0;
    let height = table_y + 40.0 + 18.0 * targets.len() as f64 + 20.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let machine = &results["machine"];
    let _ = writeln!(
        svg,
        r#"<text x="10" y="22" font-size="16" font-weight="bold">zklock bench {} — {} CPUs ({}), ZooKeeper 3.8 standalone on loopback</text>"#,
        esc(results["date"].as_str().unwrap_or("")),
        machine["cpus"],
        esc(machine["cpu_model"].as_str().unwrap_or("")),
    );
    let _ = writeln!(
        svg,
        r#"<text x="10" y="42" font-size="12">Cost curve (forceSync=no): a holder and N waiters on one lock, all cycling (acquire, release, queue again), so the depth stays N.</text>"#
    );
    let curve = results["modes"]["nosync"]["curve"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let series = |field: &str| -> Vec<Series> {
        curve
            .iter()
            .map(|(k, points)| {
                let pts = points
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| Some((p["depth"].as_f64()?, p[field].as_f64()?)))
                    .collect();
                (k.clone(), pts)
            })
            .collect()
    };
    let charts = [
        ("handoff latency p50 (µs)", "handoff_p50_us"),
        ("bytes the server sends per handoff", "bytes_per_handoff"),
        ("try-acquire at depth, p50 (µs)", "try_p50_us"),
        ("client CPU per handoff (µs)", "cpu_us_per_handoff"),
    ];
    for (i, (title, field)) in charts.iter().enumerate() {
        let x = (i % 2) as f64 * width / 2.0;
        let y = 50.0 + (i / 2) as f64 * chart_h;
        chart(
            &mut svg,
            (x, y, width / 2.0, chart_h),
            title,
            &series(field),
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="10" y="{table_y}" font-size="14" font-weight="bold">Targets (ratios of figures measured side by side in this run)</text>"#
    );
    for (i, t) in targets.iter().enumerate() {
        let y = table_y + 24.0 + 18.0 * i as f64;
        let (verdict, color) = match t["holds"].as_bool() {
            Some(true) => ("holds", "#2ca02c"),
            Some(false) => ("MISSED", "#d62728"),
            None => ("-", "#555"),
        };
        let _ = writeln!(
            svg,
            r#"<text x="10" y="{y}" font-size="12">[{}] {}</text><text x="560" y="{y}" font-size="12" text-anchor="end">{:.2}</text><text x="580" y="{y}" font-size="12">goal {}</text><text x="700" y="{y}" font-size="12" fill="{color}" font-weight="bold">{verdict}</text>"#,
            esc(t["mode"].as_str().unwrap_or("")),
            esc(t["target"].as_str().unwrap_or("")),
            t["measured"].as_f64().unwrap_or(f64::NAN),
            esc(t["goal"].as_str().unwrap_or("")),
        );
    }
    svg.push_str("</svg>\n");
    svg
}
