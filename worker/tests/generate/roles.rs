//! The roles of every text slot of the format references: with the words read by Tesseract
//! (the real binary; the test fails with what to install when it is missing), and from the
//! layout alone.

use adforge_renderer::Renderer;
use adforge_worker::blueprint::analyse_image_with;
use adforge_worker::ocr::Tesseract;

use crate::formats::{self, describe, has_roles, roles_of};

/// Tesseract on the PATH, or a failure that says what to install.
pub fn tesseract() -> Tesseract {
    Tesseract::on_path().expect(
        "tesseract is not on PATH: install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/test does)",
    )
}

#[test]
fn every_format_reference_has_its_roles_read() {
    let renderer = Renderer::with_defaults();
    let reader = tesseract();
    let mut failures = Vec::new();
    for r in formats::all() {
        let bp = analyse_image_with(&r.png(&renderer), Some(&reader)).unwrap();
        let got = roles_of(&bp);
        let mut errs = Vec::new();
        if !bp.words_read {
            errs.push("no words read".to_owned());
        }
        if !has_roles(&got, r.roles) {
            errs.push(format!("roles {got:?}, expected at least {:?}", r.roles));
        }
        if let Some(f) = r.format
            && bp.format != Some(f)
        {
            errs.push(format!(
                "format {:?} ({}), expected {f}",
                bp.format, bp.format_from
            ));
        }
        if bp.unusable().is_some() {
            errs.push(format!("unusable: {:?}", bp.unusable()));
        }
        if !errs.is_empty() {
            failures.push(format!(
                "{}: {}\n    {}",
                r.name,
                errs.join("; "),
                describe(&bp)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn without_words_roles_come_from_the_layout() {
    let renderer = Renderer::with_defaults();
    let mut failures = Vec::new();
    for r in formats::all() {
        let bp = analyse_image_with(&r.png(&renderer), None).unwrap();
        let got = roles_of(&bp);
        if bp.words_read || !has_roles(&got, r.layout_roles) {
            failures.push(format!(
                "{}: roles {got:?}, expected at least {:?}\n    {}",
                r.name,
                r.layout_roles,
                describe(&bp)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The process started ahead (its model loaded, waiting for a sheet) reads what a process
/// started for the read does, read after read, and one whose spare died starts another.
#[test]
fn a_reader_started_ahead_reads_the_same_words() {
    let renderer = Renderer::with_defaults();
    let warm = tesseract().warm();
    for r in formats::all().into_iter().take(4) {
        let png = r.png(&renderer);
        // A clone has no process started ahead: it starts one for the read.
        let cold = analyse_image_with(&png, Some(&warm.clone())).unwrap();
        let ahead = analyse_image_with(&png, Some(&warm)).unwrap();
        let words = |bp: &adforge_worker::blueprint::Blueprint| -> Vec<Option<String>> {
            bp.texts.iter().map(|t| t.words.clone()).collect()
        };
        assert!(ahead.words_read, "{}", r.name);
        assert_eq!(words(&ahead), words(&cold), "{}", r.name);
    }
}
