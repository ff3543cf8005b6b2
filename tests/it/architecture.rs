//! The architecture as ARCHITECTURE.md states it, checked where the compiler does not: inside
//! each crate, modules import one another in one direction (`scripts/import-circles.py`; the
//! crates' own `Cargo.toml` files hold the layers between crates).

use std::path::Path;

#[test]
fn modules_inside_each_crate_import_in_one_direction() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out =
        std::process::Command::new("python3").arg(root.join("scripts/import-circles.py")).arg(root).output().expect("python3 runs scripts/import-circles.py");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "import circles:\n{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("import circles: 0 in "), "{said}");
}
