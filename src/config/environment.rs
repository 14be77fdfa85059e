//! The process environment as the configuration reads it: cheaply, whatever it holds, and
//! without taking a value that is not UTF-8 for an unset one.

use std::cell::RefCell;
use std::ffi::{OsString, c_char};

/// The names of the process's environment that are UTF-8, read where the C library keeps them.
/// std's `vars_os` copies every name and every value: at 5,000 variables that copy and its
/// freeing were 6.4 million instructions, most of what a check did beyond its own work, and a
/// few hundred KiB of peak heap. Only the names are looked at, and a name that is not UTF-8 is
/// none of ours. Parsed as std parses them: a name runs to the first `=` after its first byte, and
/// an entry without one is skipped.
pub(crate) fn process_names() -> Vec<&'static str> {
    unsafe extern "C" {
        static environ: *const *const c_char;
    }
    let mut names = Vec::new();
    // SAFETY: `environ` is the C library's null-terminated array of NUL-terminated entries,
    // read before any thread starts. Nothing in this process changes its environment (the gate
    // calls neither `std::env::set_var` nor the C library's `setenv`), so the entries stay where
    // they are for the process's life. Each entry is read up to its `=` or its NUL, never past.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let start = (*entry).cast::<u8>();
            let mut len = 0;
            while *start.add(len) != 0 && (len == 0 || *start.add(len) != b'=') {
                len += 1;
            }
            if *start.add(len) == b'='
                && let Ok(name) = std::str::from_utf8(std::slice::from_raw_parts(start, len))
            {
                names.push(name);
            }
            entry = entry.add(1);
        }
    }
    names
}

/// A lookup over the environment. The gate asks for a hundred-odd variables, nearly all unset,
/// and the C library finds each by scanning the whole environment: thousands of entries in a pod
/// of a namespace with many Services. A name the environment surely lacks is answered here at
/// once; the first value that is not UTF-8 is noted, and answered as unset.
pub(super) struct Environment<'a> {
    env: &'a dyn Fn(&str) -> Option<OsString>,
    held: Held,
    not_utf8: RefCell<Option<String>>,
}

impl<'a> Environment<'a> {
    pub(super) fn new(env: &'a dyn Fn(&str) -> Option<OsString>, names: &[&str]) -> Environment<'a> {
        Environment { env, held: Held::new(names), not_utf8: RefCell::new(None) }
    }

    pub(super) fn get(&self, name: &str) -> Option<String> {
        if !self.held.may_hold(name) {
            return None;
        }
        let value = (self.env)(name)?.into_string();
        if value.is_err() {
            self.not_utf8.borrow_mut().get_or_insert_with(|| name.to_string());
        }
        value.ok()
    }

    /// The first variable asked for whose value is not UTF-8.
    pub(super) fn not_utf8(&self) -> Option<String> {
        self.not_utf8.borrow().clone()
    }
}

/// The names an environment holds, as a Bloom filter: 16 KiB whatever its size (a set of 5,000
/// names took ten times that, on top of the gate's 3 MiB). It can only be wrong by saying "maybe"
/// of a name that is not there (about one in 200 at 5,000 names), and a "maybe" is then asked of
/// the environment itself.
struct Held {
    bits: Vec<u64>,
}

impl Held {
    const BITS: usize = 1 << 17;

    fn new(names: &[&str]) -> Held {
        let mut bits = vec![0u64; Held::BITS / 64];
        for name in names {
            for i in Held::places(name) {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        Held { bits }
    }

    fn may_hold(&self, name: &str) -> bool {
        Held::places(name).iter().all(|&i| self.bits[i / 64] >> (i % 64) & 1 == 1)
    }

    /// Two places for a name, from one hash of it taken eight bytes at a time (the last few
    /// zero-padded), whole words read as such: copying each into a buffer of its own was four
    /// fifths of the filter's cost, which is paid for every name of the environment.
    fn places(name: &str) -> [usize; 2] {
        let mut hash = name.len() as u64;
        let mut mix = |word: u64| {
            hash = (hash ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            hash ^= hash >> 29;
        };
        let mut words = name.as_bytes().chunks_exact(8);
        for word in &mut words {
            mix(u64::from_le_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            mix(rest.iter().rev().fold(0, |word, b| word << 8 | u64::from(*b)));
        }
        let mask = Held::BITS as u64 - 1;
        [(hash & mask) as usize, (hash >> 32 & mask) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::Held;

    /// Whatever the environment holds, the names are those std would give, in its order.
    #[test]
    fn the_names_are_those_std_reads() {
        let std: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
        assert_eq!(super::process_names(), std);
    }

    #[test]
    fn every_name_held_is_found_and_few_others_are_taken_for_one() {
        let names: Vec<String> = (0..5_000).map(|i| format!("SVC{i:04}_BACKEND_PORT_443_TCP_ADDR")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let held = Held::new(&names);
        assert!(names.iter().all(|n| held.may_hold(n)));
        let ours: Vec<String> = crate::settings::SETTINGS
            .iter()
            .flat_map(|s| s.env.into_iter().chain(s.fallback))
            .map(String::from)
            .chain((0..1_000).map(|i| format!("UNSET_{i}")))
            .collect();
        let maybe = ours.iter().filter(|n| held.may_hold(n)).count();
        assert!(maybe * 50 < ours.len(), "{maybe} of {} unset names taken for held ones", ours.len());
        assert!(!Held::new(&[]).may_hold(""));
    }
}
