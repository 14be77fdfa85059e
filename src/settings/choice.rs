//! The settings whose value is one of a few words (`--metadata`, `--output`, `--log-level`,
//! `--log-format`): each word is written once, next to the value it means. The table names the
//! type, not the words ([`super::Parser::Choice`]), so `--help`, the parse and `--dry-run` all
//! read this one list; reordering it changes only the order `--help` lists the words in.

use crate::rules::authorization_server::MetadataKind;
use crate::rules::client::Client;
use log::LevelFilter;

/// A value chosen by a word.
pub(crate) trait Choice: Copy + PartialEq + 'static {
    /// Each word and the value it means, in the order `--help` lists them.
    const WORDS: &'static [(&'static str, Self)];

    /// The word for this value, as `--dry-run` shows it.
    fn word(self) -> &'static str {
        Self::WORDS.iter().find(|(_, v)| *v == self).map_or("?", |(w, _)| w)
    }

    /// The value a word means.
    fn from_word(word: &str) -> Option<Self> {
        Self::WORDS.iter().find(|(w, _)| *w == word).map(|(_, v)| *v)
    }

    /// The words, in order: what the table holds for a choice setting.
    fn words() -> Vec<&'static str> {
        Self::WORDS.iter().map(|(w, _)| *w).collect()
    }
}

/// Text or JSON: `--output` (the final summary: log lines only, or also one JSON object on
/// stdout) and `--log-format` (a log line as text, or as one JSON object).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
}

impl Choice for Format {
    const WORDS: &'static [(&'static str, Self)] = &[("text", Format::Text), ("json", Format::Json)];
}

impl Choice for MetadataKind {
    const WORDS: &'static [(&'static str, Self)] =
        &[("oidc", MetadataKind::Oidc), ("oauth", MetadataKind::OAuth), ("auto", MetadataKind::Auto)];
}

impl Choice for Client {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("any", Client::Any),
        ("oauth2-proxy", Client::OAuth2Proxy),
        ("go-oidc", Client::GoOidc),
        ("toolhive", Client::ToolHive),
    ];
}

/// `--log-level`: the gate's own lines, from errors only to every detail.
impl Choice for LevelFilter {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("error", LevelFilter::Error),
        ("warn", LevelFilter::Warn),
        ("info", LevelFilter::Info),
        ("debug", LevelFilter::Debug),
        ("trace", LevelFilter::Trace),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Choice + std::fmt::Debug>() {
        for (word, value) in T::WORDS {
            assert_eq!((T::from_word(word), value.word()), (Some(*value), *word));
        }
    }

    #[test]
    fn every_word_means_its_own_value() {
        round_trip::<Format>();
        round_trip::<MetadataKind>();
        round_trip::<Client>();
        round_trip::<LevelFilter>();
        assert_eq!(MetadataKind::from_word("OIDC"), None, "words are exact, as the help lists them");
    }
}
