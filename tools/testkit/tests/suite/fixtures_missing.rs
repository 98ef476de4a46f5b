//! With `ESCEPINE_FIXTURES` naming an empty folder, every fixture path is refused with an error
//! that names the missing path and says to run `.ci/fixtures`, and the authorization server of
//! the OAuth tests and the OTLP receiver of the telemetry tests do not start, saying so too. The
//! variable is read for the whole process, so the check runs in a child: this test program re-run
//! with the variable set and `--exact` naming the ignored child test alone.

use std::process::Command;

use escepine_testkit::fixtures;

#[test]
fn a_missing_install_names_the_path_and_the_script() {
    let empty = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("the test program's path");
    let out = Command::new(exe)
        .args([
            "--exact",
            "fixtures_missing::with_an_empty_fixtures_folder",
            "--ignored",
            "--test-threads=1",
        ])
        .env(fixtures::ROOT_VAR, empty.path())
        .output()
        .expect("re-run the test program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The child's half: runs only when the parent above names it, with [`fixtures::ROOT_VAR`] set.
#[test]
#[ignore = "run by a_missing_install_names_the_path_and_the_script in a child process"]
fn with_an_empty_fixtures_folder() {
    let empty = std::path::PathBuf::from(
        std::env::var_os(fixtures::ROOT_VAR).expect("the parent sets the fixtures folder"),
    );
    assert_eq!(fixtures::root(), empty);
    let venv = empty.join("py");
    let modules = empty.join("node/node_modules");
    let errors = [
        (fixtures::python_venv().map(drop), &venv),
        (fixtures::python_bin().map(drop), &venv),
        (fixtures::mcp_server_time_cmd().map(drop), &venv),
        (fixtures::mcp_server_git_cmd().map(drop), &venv),
        (fixtures::python_image_files().map(drop), &venv),
        (fixtures::python_read_only_paths().map(drop), &venv),
        (fixtures::node_modules().map(drop), &modules),
        (fixtures::server_memory_cmd().map(drop), &modules),
        (fixtures::node_image_files().map(drop), &modules),
        (fixtures::node_read_only_paths().map(drop), &modules),
    ];
    for (result, path) in errors {
        let err = result.expect_err("an empty fixtures folder");
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains("run .ci/fixtures"),
            "{text}"
        );
        assert!(
            matches!(err, fixtures::FixtureError::Missing { .. }),
            "{err:?}"
        );
    }

    // The authorization server of the OAuth tests fails, naming the script, rather than skip.
    let started = std::panic::catch_unwind(|| {
        escepine_testkit::oidc::Provider::start(&escepine_testkit::oidc::ProviderConfig::new(
            escepine_testkit::oidc::Keys::A,
            "http://127.0.0.1:1/mcp",
        ))
    });
    let panic = started.expect_err("no authorization server without node_modules");
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains(&modules.display().to_string()) && text.contains("run .ci/fixtures"),
        "{text}"
    );

    // So does the OTLP receiver of the telemetry tests, naming the virtualenv.
    let started = std::panic::catch_unwind(escepine_testkit::otlp::OtlpReceiver::start);
    let panic = started.expect_err("no OTLP receiver without the virtualenv");
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains(&venv.display().to_string()) && text.contains("run .ci/fixtures"),
        "{text}"
    );
}
