//! One watch line, as a server could send it: a typed result, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = informer_kube::fuzzing::watch_line(data);
});
