//! The bearer token file: read when the configuration is checked, so a wrong path is an error at
//! once, and again before every attempt, because projected service-account tokens rotate.

use std::fmt;
use std::path::Path;

/// Why a token file cannot be used.
#[derive(Debug)]
pub(crate) enum TokenProblem {
    Unreadable(std::io::Error),
    Empty,
    NotOneToken,
}

impl fmt::Display for TokenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            TokenProblem::Empty => write!(f, "is empty"),
            TokenProblem::NotOneToken => {
                write!(f, "holds spaces or control characters; it must hold one bearer token")
            }
        }
    }
}

/// The token in `path`, without surrounding white space.
pub(crate) fn read(path: &Path) -> Result<String, TokenProblem> {
    let text = std::fs::read_to_string(path).map_err(TokenProblem::Unreadable)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenProblem::Empty);
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(TokenProblem::NotOneToken);
    }
    Ok(token.to_string())
}
