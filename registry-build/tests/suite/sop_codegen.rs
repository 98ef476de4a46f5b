//! The typed state machines generated for the SOP fixtures compile warning-free (under
//! `#![deny(warnings, missing_docs)]`), and a step handed another tool's payload does not.
//!
//! A scratch crate (its own workspace, this workspace's lock file and target directory, so only
//! the scratch crate itself is compiled) includes the file `Builder` generated from
//! `tests/fixtures/sops/{records,valid}` and drives the SOPs through a function generic over
//! [`escepine_contract::SopStep`].

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// This workspace's target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map(Path::to_path_buf).unwrap_or(tmp)
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

const MAIN: &str = r#"//! Drives the SOPs generated from the fixtures.
#![deny(warnings, missing_docs)]

/// The generated code.
mod tools {
    include!("tools.rs");
}

use escepine_contract::{SopDefinition, SopStep, Tool};
use tools::sops::{bulk, triage, trivial};

/// A proposal for one step: its payload is the step's tool's input type.
fn propose<S: SopStep>(_step: S, input: <S::Tool as Tool>::Input) -> String {
    format!(
        "{}/{} -> {} {}",
        S::SOP_ID,
        S::STATE,
        <S::Tool as Tool>::CONTRACT.id,
        serde_json::to_string(&input).unwrap_or_default()
    )
}

fn main() {
    println!(
        "{}",
        propose(
            triage::Read,
            tools::page_fetch::Input {
                url: "https://example.com/a".parse().expect("url"),
                max_bytes: None,
            },
        )
    );
    println!(
        "{}",
        propose(
            triage::Close,
            tools::ticket_close::Input {
                ticket_id: "T-1".parse().expect("ticket id"),
            },
        )
    );
    println!(
        "{}",
        propose(
            bulk::Fetch,
            tools::pages_fetch::Input {
                urls: vec!["https://example.com/b".parse().expect("url")],
            },
        )
    );
    assert_eq!(triage::State::START, triage::State::Read);
    assert_eq!(triage::State::from(triage::Open), triage::State::Open);
    assert!(triage::State::Check.can_move_to(triage::State::Open));
    assert!(!triage::State::Read.can_move_to(triage::State::Open));
    assert_eq!(triage::State::from_name("close"), Some(triage::State::Close));
    assert_eq!(triage::State::Read.tool(), Some(tools::ToolId::PageFetch));
    assert!(triage::State::Done.is_terminal());
    assert_eq!(<triage::Open as SopStep>::CONSTRAINTS.len(), 3);
    assert_eq!(<trivial::Sop as SopDefinition>::STATES, &["done"]);
    let doc: serde_json::Value =
        serde_json::from_str(<triage::Sop as SopDefinition>::DOCUMENT).expect("document");
    assert_eq!(doc["start"], "read");
    println!("ok {}", triage::State::ALL.len());
}
"#;

/// The wrong payload for `triage::Read` (a `page_fetch` step).
const WRONG: &str = r#"
/// Hands `triage::Read` a `ticket_close` payload.
#[allow(dead_code)]
fn wrong() -> String {
    propose(
        triage::Read,
        tools::ticket_close::Input {
            ticket_id: "T-1".parse().expect("ticket id"),
        },
    )
}
"#;

fn scratch(dir: &Path) {
    let contract = manifest_dir()
        .parent()
        .expect("workspace")
        .join("registry-build/contract");
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"sop-codegen-scratch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[dependencies]\nescepine-contract = {{ path = {:?} }}\n\
             serde = {{ version = \"1\", features = [\"derive\"] }}\n\
             serde_json = {{ version = \"1\", features = [\"preserve_order\"] }}\n\n[workspace]\n",
            contract.display().to_string()
        ),
    );
    let lock = manifest_dir()
        .parent()
        .expect("workspace")
        .join("Cargo.lock");
    fs::copy(lock, dir.join("Cargo.lock")).expect("copy Cargo.lock");
    let fixtures = manifest_dir().join("tests/fixtures/sops");
    escepine_registry_build::Builder::new()
        .records(fixtures.join("records"))
        .policies(fixtures.join("policies"))
        .sops(fixtures.join("valid"))
        .out_dir(dir.join("src"))
        .manifest_dir(dir)
        .file_name("tools.rs")
        .cargo_directives(false)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `cargo <args>` in `dir`, sharing this workspace's target directory.
fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args(args)
        .args(["--offline", "--quiet", "--message-format=short"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_TERM_COLOR", "never");
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR" {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd.output().expect("run cargo")
}

#[test]
fn generated_sops_compile_and_steps_take_only_their_payload() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sop_codegen");
    let _ = fs::remove_dir_all(&dir);
    scratch(&dir);

    write(&dir.join("src/main.rs"), MAIN);
    let run = cargo(&dir, &["run"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "the generated code must compile warning-free and run:\n{stderr}"
    );
    for needle in [
        "triage/read -> page_fetch {\"url\":\"https://example.com/a\"}",
        "triage/close -> ticket_close {\"ticket_id\":\"T-1\"}",
        "bulk/fetch -> pages_fetch",
        "ok 5",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }

    write(&dir.join("src/main.rs"), &format!("{MAIN}{WRONG}"));
    let wrong = cargo(&dir, &["build"]);
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success(),
        "a step handed another tool's payload must not compile"
    );
    assert!(
        stderr.contains("E0308") && stderr.contains("src/main.rs"),
        "rustc must reject the payload type at the call site:\n{stderr}"
    );
}
