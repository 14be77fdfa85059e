//! What loading the settings finds worth saying but not wrong, said once logging is up.

/// Something worth saying once logging is up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    Warning(String),
    Note(String),
}
