//! Protected resource metadata and `WWW-Authenticate` challenges over arbitrary bytes; the properties are in `wait_for_idp::fuzz_checks`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wait_for_idp::fuzz_checks::resource(data));
