//! The fuzz targets' properties over every seed in fuzz/seeds, including the inputs the fuzzer
//! once found failing, so that the regressions stay covered without a nightly toolchain.

use std::path::Path;

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds").join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

#[test]
fn document_properties_hold_for_every_seed() {
    for (name, data) in seeds("document") {
        let result = std::panic::catch_unwind(|| wait_for_idp::fuzz_checks::document(&data));
        assert!(result.is_ok(), "seed {name}");
    }
}

#[test]
fn url_properties_hold_for_every_seed() {
    let all = seeds("urls");
    assert!(all.iter().any(|(n, _)| n.starts_with("regression-")), "the fuzzer's finding is kept");
    for (name, data) in all {
        let result = std::panic::catch_unwind(|| wait_for_idp::fuzz_checks::urls(&data));
        assert!(result.is_ok(), "seed {name}");
    }
}

#[test]
fn resource_properties_hold_for_every_seed() {
    for (name, data) in seeds("resource") {
        let result = std::panic::catch_unwind(|| wait_for_idp::fuzz_checks::resource(&data));
        assert!(result.is_ok(), "seed {name}");
    }
}
