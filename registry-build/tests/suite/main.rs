//! The generator's tests: golden files, the golden fixtures compiled, typed SOPs, enum literals
//! in policies, and policy test files run by `Builder`.

mod enum_literals;
mod golden;
mod golden_compiles;
mod policy_tests;
mod sop_codegen;
mod sop_rules;
