//! Cross-implementation check of the datatype layer.
//!
//!   datatype_crosscheck write DIR   encode test cases, write DIR/<case>.msg
//!   datatype_crosscheck read DIR    decode DIR/<case>.msg written by (possibly)
//!                                   another MPI implementation, verify values,
//!                                   signatures and external32 byte identity
//!   datatype_crosscheck bench       time encode/decode of 1 MiB payloads
//!
//! File format (little-endian): b"ISDT1\0\0\0", format u8, 7 pad bytes,
//! signature u64, count u64, root_signature u64, root_reps u64,
//! payload_len u64, payload, then the writer's MPI library version string.
//! Exit status 1 on any mismatch.

// A benchmark stops at its first failure, with the reason.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::time::Instant;

use isthmus_bridge::datatype::*;
use mpi::datatype::{MutView, UserDatatype, View};
use mpi::traits::Equivalence;

#[derive(Equivalence, Debug, Clone, Copy, PartialEq, Default)]
struct Padded {
    a: u8,
    b: f64,
    c: i32,
}

#[derive(Equivalence, Debug, Clone, Copy, PartialEq, Default)]
struct Pair {
    x: i32,
    y: i32,
}

#[derive(Equivalence, Debug, Clone, Copy, PartialEq, Default)]
struct Nested {
    p: [Padded; 2],
    flag: bool,
    v: [u16; 3],
    z: i64,
}

fn padded(n: usize) -> Vec<Padded> {
    (0..n)
        .map(|i| Padded {
            a: (i * 7) as u8,
            b: i as f64 * -1.25 + 0.1,
            c: (i as i32).wrapping_mul(-977),
        })
        .collect()
}

fn nested(n: usize) -> Vec<Nested> {
    let p = padded(2 * n);
    (0..n)
        .map(|i| Nested {
            p: [p[2 * i], p[2 * i + 1]],
            flag: i % 3 == 0,
            v: [i as u16, 65535 - i as u16, 0x1234],
            z: -(i as i64) << 40,
        })
        .collect()
}

fn f64s(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (i as f64).sqrt() * if i % 2 == 0 { 1.0 } else { -1e300 })
        .collect()
}

fn write_msg(dir: &Path, name: &str, e: &Encoded<'_>) {
    let mut v = Vec::new();
    v.extend_from_slice(b"ISDT1\0\0\0");
    v.push(e.format.to_u8());
    v.extend_from_slice(&[0; 7]);
    let s = e.sig();
    for x in [
        s.signature,
        s.count,
        s.root_signature,
        s.root_reps,
        e.bytes.len() as u64,
    ] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&e.bytes);
    v.extend_from_slice(
        mpi::environment::library_version()
            .unwrap_or_default()
            .as_bytes(),
    );
    std::fs::write(dir.join(format!("{name}.msg")), v).unwrap();
}

struct Msg {
    format: WireFormat,
    sig: MessageSig,
    bytes: Vec<u8>,
    writer: String,
}

fn read_msg(dir: &Path, name: &str) -> Msg {
    let v =
        std::fs::read(dir.join(format!("{name}.msg"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(&v[..8], b"ISDT1\0\0\0");
    let u = |i: usize| u64::from_le_bytes(v[16 + 8 * i..24 + 8 * i].try_into().unwrap());
    let len = u(4) as usize;
    Msg {
        format: WireFormat::from_u8(v[8]).unwrap(),
        sig: MessageSig {
            signature: u(0),
            count: u(1),
            root_signature: u(2),
            root_reps: u(3),
        },
        bytes: v[56..56 + len].to_vec(),
        writer: String::from_utf8_lossy(&v[56 + len..])
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

const N: usize = 37;

fn vector_type() -> UserDatatype {
    // 4 blocks of 2 i32, stride 5
    UserDatatype::vector(4, 2, 5, &i32::equivalent_datatype())
}
fn vector_src() -> Vec<i32> {
    (0..60).map(|i| i * 1_000_003 - 7).collect()
}

/// Also store what this implementation's own MPI_Pack_external produces, so
/// the reader can compare both MPIs' external32 with ours.
fn write_mpi_ext32<T: Equivalence>(dir: &Path, name: &str, data: &[T]) {
    let heterogeneous = matches!(name, "padded" | "nested");
    if heterogeneous
        && mpi::environment::library_version()
            .unwrap_or_default()
            .contains("MPICH")
    {
        return; // MPICH 4.0.x MPI_Pack_external traps (SIGILL) on heterogeneous structs
    }
    let dt = T::equivalent_datatype();
    // SAFETY: the buffer holds the count of elements of the datatype named.
    let b = unsafe {
        pack_external32(
            mpi::raw::AsRaw::as_raw(&dt),
            data.len(),
            data.as_ptr() as *const _,
        )
    }
    .unwrap();
    std::fs::write(dir.join(format!("{name}.mpiext32")), b).unwrap();
}

fn write_all(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    write_mpi_ext32(dir, "f64", &f64s(N));
    write_mpi_ext32(
        dir,
        "i32",
        &(0..N as i32).map(|x| x * -123457).collect::<Vec<_>>(),
    );
    write_mpi_ext32(dir, "bool", &(0..N).map(|x| x % 3 == 1).collect::<Vec<_>>());
    write_mpi_ext32(
        dir,
        "u64",
        &(0..N as u64)
            .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect::<Vec<_>>(),
    );
    write_mpi_ext32(dir, "padded", &padded(N));
    write_mpi_ext32(dir, "nested", &nested(N));
    write_mpi_ext32(
        dir,
        "pair",
        &(0..N as i32)
            .map(|k| Pair { x: k, y: -k * 3 })
            .collect::<Vec<_>>(),
    );
    let f = f64s(N);
    write_msg(dir, "f64", &encode(&f).unwrap());
    write_msg(
        dir,
        "f64_ext32",
        &encode_as(&f, Some(WireFormat::External32)).unwrap(),
    );
    write_msg(
        dir,
        "f64_rawbe",
        &encode_as(&f, Some(WireFormat::RawBe)).unwrap(),
    );
    let i: Vec<i32> = (0..N as i32).map(|x| x * -123457).collect();
    write_msg(dir, "i32", &encode(&i).unwrap());
    let u: Vec<u8> = (0..N).map(|x| x as u8 ^ 0xa5).collect();
    write_msg(dir, "u8", &encode(&u).unwrap());
    let h: Vec<i16> = (0..N as i16).map(|x| x * -881).collect();
    write_msg(dir, "i16", &encode(&h).unwrap());
    let q: Vec<u64> = (0..N as u64)
        .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    write_msg(dir, "u64", &encode(&q).unwrap());
    let fl: Vec<f32> = (0..N).map(|x| x as f32 / 3.0).collect();
    write_msg(dir, "f32", &encode(&fl).unwrap());
    let b: Vec<bool> = (0..N).map(|x| x % 3 == 1).collect();
    write_msg(dir, "bool", &encode(&b).unwrap());
    write_msg(dir, "padded", &encode(&padded(N)).unwrap());
    write_msg(dir, "nested", &encode(&nested(N)).unwrap());
    let pairs: Vec<Pair> = (0..N as i32).map(|k| Pair { x: k, y: -k * 3 }).collect();
    write_msg(dir, "pair", &encode(&pairs).unwrap());
    let vt = vector_type();
    let src = vector_src();
    // SAFETY: the vector type's elements lie within the slice (its extent was sized for them).
    let view = unsafe { View::with_count_and_datatype(&src[..], 3, &vt) };
    write_msg(dir, "vector", &encode_buffer(&view).unwrap());
    println!(
        "wrote {} ({})",
        dir.display(),
        mpi::environment::library_version()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or("")
    );
}

struct Checker {
    failures: usize,
}

impl Checker {
    fn check(&mut self, what: &str, ok: bool, detail: impl FnOnce() -> String) {
        if ok {
            println!("  ok    {what}");
        } else {
            println!("  FAIL  {what}: {}", detail());
            self.failures += 1;
        }
    }

    /// Decode a message of T's and compare with `expect`; also compare the
    /// writer's External32 bytes with ours (byte identity across MPIs).
    fn case<T: Equivalence + PartialEq + Copy + Default + std::fmt::Debug + 'static>(
        &mut self,
        dir: &Path,
        name: &str,
        expect: &[T],
    ) {
        let m = read_msg(dir, name);
        let info = type_info::<T>().unwrap();
        self.check(
            &format!("{name}: signature {:#018x}", info.signature),
            m.sig.signature == info.signature,
            || {
                format!(
                    "writer {:#018x} vs local {:#018x}",
                    m.sig.signature, info.signature
                )
            },
        );
        let mut out = vec![T::default(); expect.len() + 1];
        match decode_message(
            &m.sig,
            m.format,
            &m.bytes,
            &mut out,
            MatchRule::ExactElement,
        ) {
            Ok(n) => self.check(
                &format!(
                    "{name}: {n} values via {:?} ({} bytes)",
                    m.format,
                    m.bytes.len()
                ),
                n == expect.len() && &out[..n] == expect,
                || format!("got {:?}.. expected {:?}..", &out[..3.min(n)], &expect[..3]),
            ),
            Err(e) => self.check(name, false, || e.to_string()),
        }
        if let Ok(theirs) = std::fs::read(dir.join(format!("{name}.mpiext32"))) {
            let local = encode_as(expect, Some(WireFormat::External32)).unwrap();
            self.check(
                &format!("{name}: writer's MPI_Pack_external bytes identical to our external32"),
                local.bytes[..] == theirs[..],
                || format!("lengths {} vs {}", local.bytes.len(), theirs.len()),
            );
        }
        if m.format == WireFormat::External32 {
            let local = encode_as(expect, Some(WireFormat::External32)).unwrap();
            self.check(
                &format!("{name}: external32 bytes identical to local encoding"),
                local.bytes[..] == m.bytes[..],
                || {
                    let first = local.bytes.iter().zip(&m.bytes).position(|(a, b)| a != b);
                    format!(
                        "lengths {} vs {}, first difference at {first:?}",
                        local.bytes.len(),
                        m.bytes.len()
                    )
                },
            );
        }
    }
}

fn read_all(dir: &Path) -> usize {
    let mut c = Checker { failures: 0 };
    let writer = read_msg(dir, "f64").writer;
    println!(
        "reading {} written by [{writer}] with [{}]",
        dir.display(),
        mpi::environment::library_version()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or("")
    );
    let f = f64s(N);
    c.case(dir, "f64", &f);
    c.case(dir, "f64_ext32", &f);
    c.case(dir, "f64_rawbe", &f);
    c.case(
        dir,
        "i32",
        &(0..N as i32).map(|x| x * -123457).collect::<Vec<_>>(),
    );
    c.case(
        dir,
        "u8",
        &(0..N).map(|x| x as u8 ^ 0xa5).collect::<Vec<_>>(),
    );
    c.case(
        dir,
        "i16",
        &(0..N as i16).map(|x| x * -881).collect::<Vec<_>>(),
    );
    c.case(
        dir,
        "u64",
        &(0..N as u64)
            .map(|x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect::<Vec<_>>(),
    );
    c.case(
        dir,
        "f32",
        &(0..N).map(|x| x as f32 / 3.0).collect::<Vec<_>>(),
    );
    c.case(dir, "bool", &(0..N).map(|x| x % 3 == 1).collect::<Vec<_>>());
    c.case(dir, "padded", &padded(N));
    c.case(dir, "nested", &nested(N));
    let pairs: Vec<Pair> = (0..N as i32).map(|k| Pair { x: k, y: -k * 3 }).collect();
    c.case(dir, "pair", &pairs);

    // strided vector into the same strided layout
    let m = read_msg(dir, "vector");
    let vt = vector_type();
    let src = vector_src();
    let mut dst = vec![0i32; 60];
    let res = {
        // SAFETY: the vector type's elements lie within the slice (its extent was sized for them).
        let mut mv = unsafe { MutView::with_count_and_datatype(&mut dst[..], 3, &vt) };
        decode_into_buffer(&m.sig, m.format, &m.bytes, &mut mv, MatchRule::ExactElement)
    };
    // vector extent = (3*5+2) ints = 17; elements at 0,17,34
    let picked: Vec<usize> = (0..3)
        .flat_map(|e| (0..4).flat_map(move |b| (0..2).map(move |k| e * 17 + b * 5 + k)))
        .collect();
    let ok = res.is_ok()
        && dst.iter().enumerate().all(|(i, v)| {
            if picked.contains(&i) {
                *v == src[i]
            } else {
                *v == 0
            }
        });
    c.check(
        "vector: strided elements land exactly in strided slots",
        ok,
        || format!("{res:?}"),
    );
    let local = {
        // SAFETY: the vector type's elements lie within the slice (its extent was sized for them).
        let view = unsafe { View::with_count_and_datatype(&src[..], 3, &vt) };
        encode_buffer(&view).unwrap()
    };
    c.check(
        "vector: external32 bytes identical",
        local.bytes[..] == m.bytes[..] && local.signature == m.sig.signature,
        || "differ".into(),
    );
    // ... and the same message into a flat i32 buffer (MPI basic-sequence rule)
    let mut flat = vec![0i32; 24];
    let r = decode_message(
        &m.sig,
        m.format,
        &m.bytes,
        &mut flat,
        MatchRule::BasicSequence,
    );
    c.check(
        "vector -> [i32; 24] (basic-sequence rule)",
        r.as_ref().ok() == Some(&24) && flat.iter().zip(&picked).all(|(v, &i)| *v == src[i]),
        || format!("{r:?}"),
    );
    // i32 message into Pair (basic-sequence), and the type-mismatch error
    let m = read_msg(dir, "i32");
    let mut pairs_out = vec![Pair::default(); 20];
    let r = decode_message(
        &m.sig,
        m.format,
        &m.bytes,
        &mut pairs_out,
        MatchRule::BasicSequence,
    );
    c.check(
        "37 x i32 -> Pair: partial element rejected",
        matches!(r, Err(DatatypeError::PartialElement { .. })),
        || format!("{r:?}"),
    );
    let m = read_msg(dir, "pair");
    let mut ints = vec![0i32; 80];
    let r = decode_message(
        &m.sig,
        m.format,
        &m.bytes,
        &mut ints,
        MatchRule::BasicSequence,
    );
    c.check(
        "37 x Pair -> 74 x i32 (basic-sequence rule)",
        r.as_ref().ok() == Some(&74)
            && (0..37).all(|k| ints[2 * k] == k as i32 && ints[2 * k + 1] == -3 * k as i32),
        || format!("{r:?}"),
    );
    let m = read_msg(dir, "f64");
    let mut wrong = vec![0i32; 100];
    let r = decode_message(
        &m.sig,
        m.format,
        &m.bytes,
        &mut wrong,
        MatchRule::BasicSequence,
    );
    c.check(
        "f64 -> i32 is a signature mismatch",
        matches!(r, Err(DatatypeError::SignatureMismatch { .. })),
        || format!("{r:?}"),
    );
    c.failures
}

fn time<R>(label: &str, bytes: usize, reps: u32, mut f: impl FnMut() -> R) {
    let _ = f();
    let t = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(f());
    }
    let per = t.elapsed() / reps;
    println!(
        "  {label:<44} {:>9.1} us  ({:.2} GB/s)",
        per.as_secs_f64() * 1e6,
        bytes as f64 / per.as_secs_f64() / 1e9
    );
}

fn bench() {
    println!(
        "bench with [{}]",
        mpi::environment::library_version()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or("")
    );
    const MIB: usize = 1 << 20;
    let f = f64s(MIB / 8);
    let mut fo = vec![0f64; f.len()];
    time("f64 encode (raw, zero-copy)", MIB, 200, || {
        encode(&f).unwrap().bytes.len()
    });
    let raw = encode(&f).unwrap().into_owned();
    time("f64 decode raw native order (memcpy)", MIB, 200, || {
        decode_into(raw.format, &raw.bytes, f.len(), &mut fo).unwrap()
    });
    let be = encode_as(&f, Some(WireFormat::RawBe)).unwrap().into_owned();
    time("f64 encode RawBe (copy + swap)", MIB, 200, || {
        encode_as(&f, Some(WireFormat::RawBe)).unwrap().bytes.len()
    });
    time("f64 decode RawBe (copy + swap)", MIB, 200, || {
        decode_into(be.format, &be.bytes, f.len(), &mut fo).unwrap()
    });
    assert_eq!(fo, f);
    let fdt = f64::equivalent_datatype();
    // SAFETY: packs a buffer of the count of elements of the datatype named, into a buffer sized by MPI_Pack_external_size.
    time("f64 MPI_Pack_external (reference)", MIB, 50, || unsafe {
        pack_external32(
            mpi::raw::AsRaw::as_raw(&fdt),
            f.len(),
            f.as_ptr() as *const _,
        )
        .unwrap()
        .len()
    });
    let p = padded(MIB / std::mem::size_of::<Padded>());
    let mut po = vec![Padded::default(); p.len()];
    let ext = encode(&p).unwrap().into_owned();
    time(
        &format!("Padded x{} encode (MPI_Pack + swap)", p.len()),
        MIB,
        50,
        || encode(&p).unwrap().bytes.len(),
    );
    time(
        &format!("Padded x{} decode (swap + MPI_Unpack)", p.len()),
        MIB,
        50,
        || decode_into(ext.format, &ext.bytes, p.len(), &mut po).unwrap(),
    );
    assert_eq!(po, p);
    if !mpi::environment::library_version()
        .unwrap_or_default()
        .contains("MPICH")
    {
        let pdt = Padded::equivalent_datatype();
        // SAFETY: packs a buffer of the count of elements of the datatype named, into a buffer sized by MPI_Pack_external_size.
        time("Padded MPI_Pack_external (reference)", MIB, 20, || unsafe {
            pack_external32(
                mpi::raw::AsRaw::as_raw(&pdt),
                p.len(),
                p.as_ptr() as *const _,
            )
            .unwrap()
            .len()
        });
    }
    let vt = UserDatatype::vector((MIB / 8 / 2) as i32, 1, 2, &f64::equivalent_datatype());
    let src = f64s(MIB / 8);
    // SAFETY: the vector type's elements lie within the slice (its extent was sized for them).
    let view = unsafe { View::with_count_and_datatype(&src[..], 1, &vt) };
    time(
        "strided f64 vector (512 KiB data) encode",
        MIB / 2,
        50,
        || encode_buffer(&view).unwrap().bytes.len(),
    );
}

fn main() {
    let universe = mpi::initialize().expect("MPI init");
    let args: Vec<String> = std::env::args().collect();
    let code = match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("write"), Some(d)) => {
            write_all(Path::new(d));
            0
        }
        (Some("read"), Some(d)) => {
            let f = read_all(Path::new(d));
            println!(
                "{}",
                if f == 0 {
                    "ALL OK".to_string()
                } else {
                    format!("{f} FAILURES")
                }
            );
            (f > 0) as i32
        }
        (Some("bench"), _) => {
            bench();
            0
        }
        _ => {
            eprintln!("usage: datatype_crosscheck write DIR | read DIR | bench");
            2
        }
    };
    drop(universe);
    std::process::exit(code);
}
