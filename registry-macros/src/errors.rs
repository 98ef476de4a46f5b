//! Collecting every problem before reporting, as serde_derive does.

use std::fmt::Display;

use quote::ToTokens;

/// Problems found so far, reported together.
#[derive(Default)]
pub(crate) struct Errors {
    error: Option<syn::Error>,
    count: usize,
}

impl Errors {
    /// Add a problem.
    pub fn push(&mut self, error: syn::Error) {
        self.count += 1;
        match &mut self.error {
            Some(e) => e.combine(error),
            None => self.error = Some(error),
        }
    }

    /// How many problems were added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Add a problem pointing at `tokens`.
    pub fn at(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Keep the value of `result`, or record its error.
    pub fn take<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    /// `Err` with every problem, if there is one.
    pub fn finish(self) -> syn::Result<()> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
