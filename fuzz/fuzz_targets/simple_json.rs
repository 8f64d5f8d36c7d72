//! The PEP 691 JSON page readers of egress-simple, with a round trip: a page
//! that parses renders to JSON that parses back to the same page (except that
//! the renderer fills in the API version when the page had none), and
//! rendering is then a fixpoint.
#![no_main]
use egress_simple::ProjectPage;
use egress_simple::{parse_index_json, parse_project_json, render_index_json, render_project_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(page) = parse_project_json(data) {
        let rendered = render_project_json(&page);
        let again = match parse_project_json(rendered.as_bytes()) {
            Ok(again) => again,
            Err(e) => panic!("a rendered project page does not parse: {e}"),
        };
        assert_eq!(
            render_project_json(&again),
            rendered,
            "render is a fixpoint"
        );
        let unversioned = |p: &ProjectPage| ProjectPage {
            api_version: None,
            ..p.clone()
        };
        assert_eq!(
            unversioned(&again),
            unversioned(&page),
            "project page round trip"
        );
    }
    if let Ok(index) = parse_index_json(data) {
        let rendered = render_index_json(&index);
        let again = match parse_index_json(rendered.as_bytes()) {
            Ok(again) => again,
            Err(e) => panic!("a rendered index page does not parse: {e}"),
        };
        assert_eq!(render_index_json(&again), rendered, "render is a fixpoint");
        assert_eq!(again.projects, index.projects, "index page round trip");
    }
});
