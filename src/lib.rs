//! Workspace-level scenarios of Escepine live in `tests/` and `examples/`.
