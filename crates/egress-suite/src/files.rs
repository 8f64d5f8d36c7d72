//! The files a report is written as: one report's (text, JSON, JUnit,
//! HTML, SARIF), several reports' matrices and index page, and a
//! `check --from-sandbox` report's. The top of the renderers: it uses them
//! all and none uses it.

use crate::combined::Combined;
use crate::report::Report;

/// The extensions of the files [`report_files`] writes for each report.
pub const REPORT_EXTENSIONS: [&str; 5] = ["json", "txt", "junit.xml", "html", "sarif"];

/// The files of each report, `<stem>.json`, `<stem>.txt`,
/// `<stem>.junit.xml`, `<stem>.html` and `<stem>.sarif`, and, for more
/// than one report, the matrix as `matrix.md` and `matrix.txt` and all of
/// them in `index.html`: (file name, contents), in writing order.
pub fn report_files(reports: &[(&str, &Report)]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for (stem, r) in reports {
        files.push((format!("{stem}.json"), crate::render::json(r)));
        files.push((format!("{stem}.txt"), crate::render::text(r)));
        files.push((format!("{stem}.junit.xml"), crate::render::junit(r)));
        files.push((format!("{stem}.html"), crate::html::reports(&[r])));
        files.push((format!("{stem}.sarif"), crate::sarif::reports(&[r])));
    }
    if reports.len() > 1 {
        let refs: Vec<&Report> = reports.iter().map(|(_, r)| *r).collect();
        files.push(("matrix.md".into(), crate::render::matrix_markdown(&refs)));
        files.push(("matrix.txt".into(), crate::render::matrix_text(&refs)));
        files.push(("index.html".into(), crate::html::reports(&refs)));
    }
    files
}

/// A `check --from-sandbox` report's files, `report.json`, `report.txt`,
/// `report.junit.xml`, `report.html` and `report.sarif`: (file name,
/// contents), in writing order.
pub fn combined_files(both: &Combined) -> [(&'static str, String); 5] {
    [
        ("report.json", both.json()),
        ("report.txt", both.text()),
        ("report.junit.xml", both.junit()),
        ("report.html", crate::html::combined(both)),
        ("report.sarif", crate::sarif::combined(both)),
    ]
}
