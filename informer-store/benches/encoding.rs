//! Which encoding should the compact store keep objects in? Bytes per pod, and the time to
//! encode and to decode one, for realistic pods (`support/pods.rs`: ~6 KB of JSON with five
//! `managedFields` entries).
//!
//! Run: `cargo bench -p informer-store --features compact --bench encoding`.
//!
//! Dictionaries are trained on the first `TRAIN` pods and every figure is taken on `TEST`
//! other pods, each compressed on its own (the store must decode one object without its
//! neighbours). The seed pods come from one generator, so they resemble each other more than a
//! real cluster's pods do: read the dictionary ratios as an upper bound.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench
#![allow(missing_docs)]

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/pods.rs"]
mod pods;

use cpu::cpu_ns;
use std::hint::black_box;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;

const TRAIN: usize = 1_000;
const TEST: usize = 2_000;
const SEED: u64 = 15;

struct Row {
    name: String,
    bytes: f64,
    encode_us: f64,
    decompress_us: f64,
    decode_us: f64,
}

type Encode = Box<dyn Fn(&Pod) -> Vec<u8>>;
type Unpack = Box<dyn Fn(&[u8]) -> Vec<u8>>;
type Decode = Box<dyn Fn(&[u8]) -> Pod>;
/// A row of the decode table: what is decoded, from which inputs, how.
type DecodeRow<'a> = (&'a str, &'a [Vec<u8>], fn(&[u8]));

/// An encoding: object → bytes, bytes → serialized form (decompression only), bytes → object.
struct Codec {
    name: String,
    encode: Encode,
    unpack: Unpack,
    decode: Decode,
}

/// CPU µs per item of `f`: best of three rounds after a warm-up pass, each round repeating
/// passes over `items` for at least 300 ms (the kernel updates a running thread's CPU time at
/// scheduler ticks, a few milliseconds apart).
fn cpu_per_item<T>(items: &[T], f: impl Fn(&T)) -> f64 {
    items.iter().for_each(&f);
    (0..3)
        .map(|_| {
            let start = cpu_ns();
            let mut done = 0;
            while cpu_ns() - start < 300_000_000 {
                items.iter().for_each(&f);
                done += items.len();
            }
            (cpu_ns() - start) as f64 / 1e3 / done as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn measure(codec: &Codec, test: &[Pod]) -> Row {
    let encoded: Vec<Vec<u8>> = test.iter().map(|p| (codec.encode)(p)).collect();
    for (pod, bytes) in test.iter().zip(&encoded) {
        assert_eq!(
            &(codec.decode)(bytes),
            pod,
            "{} does not round-trip",
            codec.name
        );
    }
    let bytes = encoded.iter().map(Vec::len).sum::<usize>() as f64 / test.len() as f64;
    let encode_us = cpu_per_item(test, |p| {
        black_box((codec.encode)(p));
    });
    let decompress_us = cpu_per_item(&encoded, |b| {
        black_box((codec.unpack)(b));
    });
    let decode_us = cpu_per_item(&encoded, |b| {
        black_box((codec.decode)(b));
    });
    Row {
        name: codec.name.clone(),
        bytes,
        encode_us,
        decompress_us,
        decode_us,
    }
}

fn json(pod: &Pod) -> Vec<u8> {
    serde_json::to_vec(pod).unwrap()
}

fn cbor(pod: &Pod) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(pod, &mut out).unwrap();
    out
}

fn from_cbor(bytes: &[u8]) -> Pod {
    ciborium::from_reader(bytes).unwrap()
}

/// MessagePack as the compact store writes it: structs as maps with their field names (so that
/// every type decodes as it would from JSON, `deserialize_any` included) and human-readable
/// (types that serialize differently for binary formats write what they write for JSON).
fn msgpack(pod: &Pod) -> Vec<u8> {
    use serde::Serialize;
    let mut out = Vec::new();
    let mut ser = rmp_serde::Serializer::new(&mut out)
        .with_struct_map()
        .with_human_readable();
    pod.serialize(&mut ser).unwrap();
    out
}

fn from_msgpack(bytes: &[u8]) -> Pod {
    use serde::Deserialize;
    let mut de = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
    Pod::deserialize(&mut de).unwrap()
}

/// zstd with a dictionary trained on `train` (already serialized), at `level`.
fn zstd_dict(
    name: &str,
    train: &[Vec<u8>],
    dict_size: usize,
    level: i32,
    serialize: fn(&Pod) -> Vec<u8>,
    deserialize: fn(&[u8]) -> Pod,
) -> Codec {
    use std::cell::RefCell;
    use std::rc::Rc;
    let dict = zstd::dict::from_samples(train, dict_size).unwrap();
    let cctx = Rc::new(RefCell::new(
        zstd::bulk::Compressor::with_dictionary(level, &dict).unwrap(),
    ));
    let dctx = Rc::new(RefCell::new(
        zstd::bulk::Decompressor::with_dictionary(&dict).unwrap(),
    ));
    let dctx2 = dctx.clone();
    let unpack = move |b: &[u8]| -> Vec<u8> {
        let size = zstd::zstd_safe::get_frame_content_size(b).unwrap().unwrap() as usize;
        dctx.borrow_mut().decompress(b, size).unwrap()
    };
    let unpack2 = move |b: &[u8]| -> Vec<u8> {
        let size = zstd::zstd_safe::get_frame_content_size(b).unwrap().unwrap() as usize;
        dctx2.borrow_mut().decompress(b, size).unwrap()
    };
    Codec {
        name: format!("{name} + zstd-{level} dict {} KiB", dict.len() / 1024),
        encode: Box::new(move |p| cctx.borrow_mut().compress(&serialize(p)).unwrap()),
        unpack: Box::new(unpack),
        decode: Box::new(move |b| deserialize(&unpack2(b))),
    }
}

fn main() {
    let train_pods: Vec<Pod> = (0..TRAIN).map(|i| pods::pod(SEED, i)).collect();
    let test: Vec<Pod> = (TRAIN..TRAIN + TEST).map(|i| pods::pod(SEED, i)).collect();
    let train_json: Vec<Vec<u8>> = train_pods.iter().map(json).collect();
    let train_cbor: Vec<Vec<u8>> = train_pods.iter().map(cbor).collect();
    let train_msgpack: Vec<Vec<u8>> = train_pods.iter().map(msgpack).collect();
    let from_json = |b: &[u8]| -> Pod { serde_json::from_slice(b).unwrap() };

    let mut codecs = vec![
        Codec {
            name: "JSON (serde_json::to_vec)".to_owned(),
            encode: Box::new(json),
            unpack: Box::new(|b| b.to_vec()),
            decode: Box::new(from_json),
        },
        Codec {
            name: "MessagePack (rmp-serde, named, human-readable)".to_owned(),
            encode: Box::new(msgpack),
            unpack: Box::new(|b| b.to_vec()),
            decode: Box::new(from_msgpack),
        },
        Codec {
            name: "CBOR (ciborium)".to_owned(),
            encode: Box::new(cbor),
            unpack: Box::new(|b| b.to_vec()),
            decode: Box::new(from_cbor),
        },
    ];
    {
        use std::cell::RefCell;
        let cctx = RefCell::new(zstd::bulk::Compressor::new(3).unwrap());
        let dctx = RefCell::new(zstd::bulk::Decompressor::new().unwrap());
        let dctx2 = RefCell::new(zstd::bulk::Decompressor::new().unwrap());
        codecs.push(Codec {
            name: "JSON + zstd-3, no dictionary".to_owned(),
            encode: Box::new(move |p| cctx.borrow_mut().compress(&json(p)).unwrap()),
            unpack: Box::new(move |b| dctx.borrow_mut().decompress(b, 64 << 10).unwrap()),
            decode: Box::new(move |b| {
                serde_json::from_slice(&dctx2.borrow_mut().decompress(b, 64 << 10).unwrap())
                    .unwrap()
            }),
        });
    }
    for (dict_size, level) in [
        (16 << 10, 3),
        (64 << 10, 1),
        (64 << 10, 3),
        (64 << 10, 9),
        (112 << 10, 3),
    ] {
        codecs.push(zstd_dict(
            "JSON",
            &train_json,
            dict_size,
            level,
            json,
            |b| serde_json::from_slice(b).unwrap(),
        ));
    }
    codecs.push(zstd_dict("CBOR", &train_cbor, 64 << 10, 3, cbor, from_cbor));
    for (dict_size, level) in [(64 << 10, 1), (64 << 10, 3), (112 << 10, 3)] {
        codecs.push(zstd_dict(
            "MessagePack",
            &train_msgpack,
            dict_size,
            level,
            msgpack,
            from_msgpack,
        ));
    }
    {
        let joined: Vec<u8> = train_msgpack.concat();
        let dict: Vec<u8> = joined[joined.len().saturating_sub(64 << 10)..].to_vec();
        let dict2 = dict.clone();
        let dict3 = dict.clone();
        codecs.push(Codec {
            name: "MessagePack + lz4_flex, 64 KiB of pods as dictionary".to_owned(),
            encode: Box::new(move |p| {
                lz4_flex::block::compress_prepend_size_with_dict(&msgpack(p), &dict)
            }),
            unpack: Box::new(move |b| {
                lz4_flex::block::decompress_size_prepended_with_dict(b, &dict2).unwrap()
            }),
            decode: Box::new(move |b| {
                from_msgpack(
                    &lz4_flex::block::decompress_size_prepended_with_dict(b, &dict3).unwrap(),
                )
            }),
        });
    }
    {
        // LZ4 (pure Rust) with the last 64 KiB of the training pods as its dictionary: LZ4 has
        // no trained dictionaries, only a window of earlier text.
        let joined: Vec<u8> = train_json.concat();
        let dict: Vec<u8> = joined[joined.len().saturating_sub(64 << 10)..].to_vec();
        let dict2 = dict.clone();
        let dict3 = dict.clone();
        let unpack = move |b: &[u8]| {
            lz4_flex::block::decompress_size_prepended_with_dict(b, &dict2).unwrap()
        };
        let unpack2 = move |b: &[u8]| {
            lz4_flex::block::decompress_size_prepended_with_dict(b, &dict3).unwrap()
        };
        codecs.push(Codec {
            name: "JSON + lz4_flex, 64 KiB of pods as dictionary".to_owned(),
            encode: Box::new(move |p| {
                lz4_flex::block::compress_prepend_size_with_dict(&json(p), &dict)
            }),
            unpack: Box::new(unpack),
            decode: Box::new(move |b| serde_json::from_slice(&unpack2(b)).unwrap()),
        });
    }

    let rows: Vec<Row> = codecs.iter().map(|c| measure(c, &test)).collect();
    let json_bytes = rows[0].bytes;
    println!(
        "{TEST} pods (dictionaries trained on {TRAIN} others); decoded typed Pod is ~44 KB of heap\n"
    );
    println!("(times: CPU µs of this thread per pod)\n");
    println!("| encoding | bytes/pod | × JSON | encode µs | decompress µs | decode µs (to Pod) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.3} | {:.1} | {:.1} | {:.1} |",
            r.name,
            r.bytes,
            r.bytes / json_bytes,
            r.encode_us,
            r.decompress_us,
            r.decode_us
        );
    }
    // Training: how long it takes, and how good the dictionary is, by sample count.
    println!("\n| trained on | training ms | bytes/pod (zstd-3, 64 KiB dict) |");
    println!("|---:|---:|---:|");
    for samples in [100, 300, 1_000] {
        let start = Instant::now();
        let dict = zstd::dict::from_samples(&train_json[..samples], 64 << 10).unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let mut cctx = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
        let bytes: usize = test
            .iter()
            .map(|p| cctx.compress(&json(p)).unwrap().len())
            .sum();
        println!(
            "| {samples} pods | {ms:.0} | {:.0} |",
            bytes as f64 / test.len() as f64
        );
    }
    println!(
        "\nsize_of::<Pod>() = {} bytes inline; JSON of the test pods: {:.0} bytes on average",
        std::mem::size_of::<Pod>(),
        json_bytes
    );
    // Where a decode's time goes, in CPU time of this thread (steadier than wall time on a
    // shared machine).
    let encoded: Vec<Vec<u8>> = test.iter().map(json).collect();
    let without_managed_fields: Vec<Vec<u8>> = test
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.metadata.managed_fields = None;
            json(&p)
        })
        .collect();
    println!("\n| decoding one pod | CPU µs |");
    println!("|---|---:|");
    let msgpack_encoded: Vec<Vec<u8>> = test.iter().map(msgpack).collect();
    let msgpack_without_managed_fields: Vec<Vec<u8>> = test
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.metadata.managed_fields = None;
            msgpack(&p)
        })
        .collect();
    let rows: [DecodeRow<'_>; 9] = [
        ("rmp-serde → Pod", &msgpack_encoded, |b| {
            black_box(from_msgpack(b));
        }),
        ("rmp-serde → serde_json::Value", &msgpack_encoded, |b| {
            use serde::Deserialize;
            let mut de = rmp_serde::Deserializer::from_read_ref(b).with_human_readable();
            black_box(serde_json::Value::deserialize(&mut de).unwrap());
        }),
        (
            "rmp-serde → informer_testing::JsonObject",
            &msgpack_encoded,
            |b| {
                use serde::Deserialize;
                let mut de = rmp_serde::Deserializer::from_read_ref(b).with_human_readable();
                black_box(informer_testing::JsonObject::deserialize(&mut de).unwrap());
            },
        ),
        (
            "rmp-serde → Pod, managedFields dropped beforehand",
            &msgpack_without_managed_fields,
            |b| {
                black_box(from_msgpack(b));
            },
        ),
        ("serde_json::from_slice → Pod", &encoded, |b| {
            black_box(serde_json::from_slice::<Pod>(b).unwrap());
        }),
        (
            "str::from_utf8, then serde_json::from_str → Pod",
            &encoded,
            |b| {
                black_box(serde_json::from_str::<Pod>(std::str::from_utf8(b).unwrap()).unwrap());
            },
        ),
        (
            "serde_json::from_slice → serde_json::Value",
            &encoded,
            |b| {
                black_box(serde_json::from_slice::<serde_json::Value>(b).unwrap());
            },
        ),
        (
            "serde_json::from_slice → informer_testing::JsonObject",
            &encoded,
            |b| {
                black_box(serde_json::from_slice::<informer_testing::JsonObject>(b).unwrap());
            },
        ),
        (
            "serde_json::from_slice → Pod, managedFields dropped beforehand",
            &without_managed_fields,
            |b| {
                black_box(serde_json::from_slice::<Pod>(b).unwrap());
            },
        ),
    ];
    for (name, inputs, f) in rows {
        let cpu = cpu_per_item(inputs, |b| f(b));
        println!("| {name} | {cpu:.1} |");
    }
    // The floor under any decode into `Pod`: building the same object without parsing
    // anything (a clone: the same allocations and copies), and freeing it.
    let cpu = cpu_per_item(&test, |p| {
        black_box(p.clone());
    });
    println!("| Pod::clone and drop (no parsing: the floor of any decode into Pod) | {cpu:.1} |");
    let mut without = test.clone();
    for p in &mut without {
        p.metadata.managed_fields = None;
    }
    let cpu = cpu_per_item(&without, |p| {
        black_box(p.clone());
    });
    println!("| Pod::clone and drop, managedFields dropped beforehand | {cpu:.1} |");
    // Formats that are not self-describing (fields by position, no type tags) cannot carry
    // these types: k8s-openapi's structs read maps only and skip absent optional fields, and
    // serde_json::Value (managedFields' FieldsV1, dynamic objects) needs `deserialize_any`.
    let pod = &test[0];
    let postcard_pod = postcard::to_allocvec(pod)
        .map_err(|e| e.to_string())
        .and_then(|b| postcard::from_bytes::<Pod>(&b).map_err(|e| e.to_string()));
    let value: serde_json::Value = serde_json::to_value(pod).unwrap();
    let postcard_value = postcard::to_allocvec(&value)
        .map_err(|e| e.to_string())
        .and_then(|b| postcard::from_bytes::<serde_json::Value>(&b).map_err(|e| e.to_string()));
    println!(
        "\npostcard round trip of a Pod: {}; of its serde_json::Value: {}",
        match postcard_pod {
            Ok(back) if &back == pod => "ok".to_owned(),
            Ok(_) => "decodes to another Pod".to_owned(),
            Err(e) => format!("fails ({e})"),
        },
        match postcard_value {
            Ok(back) if back == value => "ok".to_owned(),
            Ok(_) => "decodes to another value".to_owned(),
            Err(e) => format!("fails ({e})"),
        }
    );
}
