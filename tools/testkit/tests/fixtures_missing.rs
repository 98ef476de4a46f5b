//! With `ESCEPINE_FIXTURES` naming an empty folder, every fixture path is refused with an error
//! that names the missing path and says to run `.ci/fixtures`. (Its own test binary: it sets
//! the variable for the whole process.)

use escepine_testkit::fixtures;

#[test]
fn a_missing_install_names_the_path_and_the_script() {
    let empty = tempfile::tempdir().expect("tempdir");
    std::env::set_var(fixtures::ROOT_VAR, empty.path());
    assert_eq!(fixtures::root(), empty.path());
    let venv = empty.path().join("py");
    let modules = empty.path().join("node/node_modules");
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
}
