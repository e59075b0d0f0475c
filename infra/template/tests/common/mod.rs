//! The translated `template.yaml`, as `make validate` makes it (`infra/scripts/translate.sh`, the
//! pinned SAM translator; installed on first use), and a way to translate other templates.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Translates `template` into `out` with the real SAM translator; `Err` with its message.
pub fn translate_file(template: &Path, out: &Path) -> Result<(), String> {
    let output = Command::new(root().join("infra/scripts/translate.sh"))
        .arg(template)
        .arg(out)
        .output()
        .unwrap();
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// The translation of the project's `template.yaml` (made again when the template is newer).
pub fn translated() -> Value {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = LOCK.lock().unwrap();
    let template = root().join("template.yaml");
    let out = root().join("target/sam/template.json");
    let stale = match (std::fs::metadata(&template), std::fs::metadata(&out)) {
        (Ok(t), Ok(o)) => t.modified().unwrap() > o.modified().unwrap(),
        _ => true,
    };
    if stale {
        translate_file(&template, &out).expect("template.yaml translates");
    }
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Translates a SAM template given as text.
pub fn translate_text(name: &str, text: &str) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("relevo-translate-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (source, out) = (dir.join("template.yaml"), dir.join("template.json"));
    std::fs::write(&source, text).unwrap();
    let result = translate_file(&source, &out)
        .map(|()| serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    result
}
