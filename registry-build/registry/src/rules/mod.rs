//! The registration rules, by subject: the naming rules ([`names`]) and the rules of tool
//! records ([`record`]). The rules of SOP files ([`crate::sop`]) are in `rules::sop`, those of the envelope in
//! [`crate::envelope`], those of schemas in [`crate::schema`], those of Cedar in `escepine_policy::cedar`.

pub mod names;
pub mod record;
pub(crate) mod sop;
