//! A list body, streamed in the chunk sizes the first bytes choose, against the whole-body
//! decoder, with a small and a large cap on one value: agreement, buffers within the cap,
//! never a panic (the checks are in `informer_kube::fuzzing::list_body`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let chunks: Vec<usize> = data[..3].iter().map(|b| usize::from(*b % 64) + 1).collect();
    let body = &data[3..];
    let _ = informer_kube::fuzzing::list_body(body, &chunks, 96);
    let _ = informer_kube::fuzzing::list_body(body, &chunks, 1 << 20);
});
