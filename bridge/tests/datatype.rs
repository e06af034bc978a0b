//! Datatype-layer tests against the real MPI library this crate was built
//! with. MPI can be initialized only once per process, so everything runs
//! inside ONE #[test].

#![cfg(test)]

use isthmus_bridge::datatype::*;
use mpi::datatype::{MutView, UserDatatype, View};
use mpi::ffi;
use mpi::raw::AsRaw;
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
}

fn runs(list: &[(BasicType, u64)]) -> Vec<Run> {
    list.iter()
        .map(|&(basic, count)| Run { basic, count })
        .collect()
}

fn check_sig<T: Equivalence + 'static>(expect: &[(BasicType, u64)]) -> u64 {
    let info = type_info::<T>().unwrap();
    assert_eq!(
        info.runs,
        runs(expect),
        "runs of {}",
        std::any::type_name::<T>()
    );
    assert_eq!(info.signature, hash_runs(&info.runs));
    // cached: same pointer on second call
    assert!(std::ptr::eq(info, type_info::<T>().unwrap()));
    info.signature
}

fn primitives() {
    use BasicType::*;
    let sigs = [
        check_sig::<i8>(&[(I8, 1)]),
        check_sig::<u8>(&[(U8, 1)]),
        check_sig::<i16>(&[(I16, 1)]),
        check_sig::<u16>(&[(U16, 1)]),
        check_sig::<i32>(&[(I32, 1)]),
        check_sig::<u32>(&[(U32, 1)]),
        check_sig::<i64>(&[(I64, 1)]),
        check_sig::<u64>(&[(U64, 1)]),
        check_sig::<f32>(&[(F32, 1)]),
        check_sig::<f64>(&[(F64, 1)]),
        check_sig::<bool>(&[(Bool, 1)]),
    ];
    for (i, a) in sigs.iter().enumerate() {
        for b in &sigs[i + 1..] {
            assert_ne!(a, b, "primitive signatures must be distinct");
        }
    }
    // usize/isize are rsmpi aliases of u64/i64 on 64-bit
    assert_eq!(
        type_info::<usize>().unwrap().signature,
        type_info::<u64>().unwrap().signature
    );
    for t in [
        type_info::<f64>().unwrap(),
        type_info::<bool>().unwrap(),
        type_info::<u16>().unwrap(),
    ] {
        assert!(t.raw, "{t:?} should use the raw path");
        assert!(t.contiguous_basic.is_some());
        assert_eq!(t.wire_size_per_elem, t.data_size_per_elem);
    }
    // stability: pinned values (identical under Open MPI and MPICH)
    assert_eq!(
        hash_runs(&runs(&[(F64, 1)])),
        type_info::<f64>().unwrap().signature
    );
    println!("signature f64 = {:#018x}, i32 = {:#018x}", sigs[9], sigs[4]);
    println!("primitives: ok");
}

fn padded_struct() {
    use BasicType::*;
    check_sig::<Padded>(&[(U8, 1), (F64, 1), (I32, 1)]);
    let info = type_info::<Padded>().unwrap();
    assert!(!info.raw);
    assert_eq!(info.external32_size_per_elem, 13);
    assert_eq!(info.extent, std::mem::size_of::<Padded>());
    let data: Vec<Padded> = (0..100)
        .map(|i| Padded {
            a: i as u8,
            b: i as f64 * 0.5 - 7.25,
            c: -i * 1000,
        })
        .collect();
    let enc = encode(&data).unwrap();
    assert_eq!(enc.format, WireFormat::External32);
    assert_eq!(enc.bytes.len(), 13 * 100);
    // external32 is big-endian, typemap order, no padding
    assert_eq!(enc.bytes[0], 0);
    assert_eq!(&enc.bytes[1..9], &(-7.25f64).to_be_bytes());
    assert_eq!(&enc.bytes[9..13], &0i32.to_be_bytes());
    assert_eq!(&enc.bytes[13 + 9..13 + 13], &(-1000i32).to_be_bytes());
    let mut out = vec![Padded::default(); 120];
    let n = decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut out,
        MatchRule::ExactElement,
    )
    .unwrap();
    assert_eq!(n, 100);
    assert_eq!(&out[..100], &data[..]);
    assert_eq!(out[100], Padded::default());

    // nested arrays of structs
    check_sig::<Nested>(&[
        (U8, 1),
        (F64, 1),
        (I32, 1),
        (U8, 1),
        (F64, 1),
        (I32, 1),
        (Bool, 1),
        (U16, 3),
    ]);
    let nd = vec![
        Nested {
            p: [data[3], data[4]],
            flag: true,
            v: [1, 2, 65535],
        },
        Nested {
            p: [data[5], data[6]],
            flag: false,
            v: [7, 8, 9],
        },
    ];
    let enc = encode(&nd).unwrap();
    let mut out = vec![Nested::default(); 2];
    decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut out,
        MatchRule::ExactElement,
    )
    .unwrap();
    assert_eq!(out, nd);
    // our MPI_Pack + swap external32 equals MPI_Pack_external's, where the
    // implementation can do it (MPICH 4.0 traps on heterogeneous structs)
    if !is_mpich() {
        let owner = Padded::equivalent_datatype();
        // SAFETY: the buffer holds the count of elements of the datatype named.
        let mpi_bytes =
            unsafe { pack_external32(owner.as_raw(), data.len(), data.as_ptr() as *const _) }
                .unwrap();
        assert_eq!(
            &mpi_bytes[..],
            &encode(&data).unwrap().bytes[..],
            "Padded: ours vs MPI_Pack_external"
        );
        let owner = Nested::equivalent_datatype();
        // SAFETY: the buffer holds the count of elements of the datatype named.
        let mpi_bytes =
            unsafe { pack_external32(owner.as_raw(), nd.len(), nd.as_ptr() as *const _) }.unwrap();
        assert_eq!(
            &mpi_bytes[..],
            &encode(&nd).unwrap().bytes[..],
            "Nested: ours vs MPI_Pack_external"
        );
        println!("derived structs: identical to MPI_Pack_external output");
    }
    println!("padded/nested struct external32 round-trip: ok");
}

fn strided_vector() {
    // 4 blocks of 1 i32, stride 3: picks elements 0, 3, 6, 9
    let vty = UserDatatype::vector(4, 1, 3, &i32::equivalent_datatype());
    let info = datatype_info(vty.as_raw()).unwrap();
    assert_eq!(info.runs, runs(&[(BasicType::I32, 4)]));
    assert!(!info.raw);
    let src: Vec<i32> = (0..24).map(|i| i * 11 - 50).collect();
    // two vector elements: extent of the vector is 10 ints, so the second
    // starts at index 10: picks 10, 13, 16, 19
    // SAFETY: the vector type covers 2 elements within the slice (checked by its extent).
    let view = unsafe { View::with_count_and_datatype(&src[..], 2, &vty) };
    let enc = encode_buffer(&view).unwrap();
    assert_eq!(enc.format, WireFormat::External32);
    // SAFETY: the buffer holds the count of elements of the datatype named.
    let mpi_bytes = unsafe { pack_external32(vty.as_raw(), 2, src.as_ptr() as *const _) }.unwrap();
    assert_eq!(
        &mpi_bytes[..],
        &enc.bytes[..],
        "vector: ours vs MPI_Pack_external"
    );
    let picked: Vec<i32> = [0, 3, 6, 9, 10, 13, 16, 19]
        .iter()
        .map(|&i| src[i])
        .collect();
    let expect: Vec<u8> = picked.iter().flat_map(|v| v.to_be_bytes()).collect();
    assert_eq!(
        &enc.bytes[..],
        &expect[..],
        "exactly the strided elements, big-endian"
    );

    // receive into the same strided layout: only the strided slots change
    let mut dst = vec![0i32; 24];
    {
        // SAFETY: the vector type covers 2 elements within the slice (checked by its extent).
        let mut mview = unsafe { MutView::with_count_and_datatype(&mut dst[..], 2, &vty) };
        let n = decode_into_buffer(
            &enc.sig(),
            enc.format,
            &enc.bytes,
            &mut mview,
            MatchRule::ExactElement,
        )
        .unwrap();
        assert_eq!(n, 2);
    }
    for (i, v) in dst.iter().enumerate() {
        if [0, 3, 6, 9, 10, 13, 16, 19].contains(&i) {
            assert_eq!(*v, src[i]);
        } else {
            assert_eq!(*v, 0, "slot {i} must be untouched");
        }
    }
    // receive into a plain i32 slice: MPI's basic-sequence rule allows it
    let mut flat = vec![0i32; 8];
    assert!(matches!(
        decode_message(
            &enc.sig(),
            enc.format,
            &enc.bytes,
            &mut flat,
            MatchRule::ExactElement
        ),
        Err(DatatypeError::SignatureMismatch { .. })
    ));
    let n = decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut flat,
        MatchRule::BasicSequence,
    )
    .unwrap();
    assert_eq!(n, 8);
    assert_eq!(flat, picked);
    // and a raw i32 message into the strided layout (raw -> external32 conversion)
    let enc2 = encode(&picked).unwrap();
    assert_eq!(enc2.format, WireFormat::native());
    let mut dst2 = vec![0i32; 24];
    {
        // SAFETY: the vector type covers 2 elements within the slice (checked by its extent).
        let mut mview = unsafe { MutView::with_count_and_datatype(&mut dst2[..], 2, &vty) };
        let n = decode_into_buffer(
            &enc2.sig(),
            enc2.format,
            &enc2.bytes,
            &mut mview,
            MatchRule::BasicSequence,
        )
        .unwrap();
        assert_eq!(n, 2);
    }
    assert_eq!(dst, dst2);
    println!("strided vector: ok");
}

fn mismatches() {
    let f = [1.0f64, 2.0, 3.0];
    let enc = encode(&f).unwrap();
    let mut out = [0i32; 6];
    let err = decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut out,
        MatchRule::BasicSequence,
    )
    .unwrap_err();
    println!("f64 -> i32: {err}");
    assert!(matches!(err, DatatypeError::SignatureMismatch { .. }));
    assert_eq!(out, [0; 6], "nothing written on mismatch");
    assert_ne!(
        type_info::<f64>().unwrap().signature,
        type_info::<i32>().unwrap().signature
    );
    assert_ne!(
        type_info::<f64>().unwrap().signature,
        type_info::<i64>().unwrap().signature
    );

    // truncation
    let mut small = [0f64; 2];
    let err = decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut small,
        MatchRule::ExactElement,
    )
    .unwrap_err();
    println!("3 f64 -> [f64; 2]: {err}");
    assert!(matches!(
        err,
        DatatypeError::Truncated {
            incoming: 3,
            capacity: 2
        }
    ));

    // length mismatch
    let err = decode_into::<f64>(enc.format, &enc.bytes[..20], 3, &mut [0.0; 3]).unwrap_err();
    assert!(matches!(err, DatatypeError::LengthMismatch { .. }));

    // 4 i32 -> 2 Pair (basic-sequence rule), exact rule rejects; 3 i32 is a partial Pair
    let ints = [10i32, 20, 30, 40];
    let enc = encode(&ints).unwrap();
    let mut pairs = [Pair::default(); 2];
    assert!(decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut pairs,
        MatchRule::ExactElement
    )
    .is_err());
    let n = decode_message(
        &enc.sig(),
        enc.format,
        &enc.bytes,
        &mut pairs,
        MatchRule::BasicSequence,
    )
    .unwrap();
    assert_eq!(n, 2);
    assert_eq!(pairs, [Pair { x: 10, y: 20 }, Pair { x: 30, y: 40 }]);
    let enc3 = encode(&ints[..3]).unwrap();
    let err = decode_message(
        &enc3.sig(),
        enc3.format,
        &enc3.bytes,
        &mut pairs,
        MatchRule::BasicSequence,
    )
    .unwrap_err();
    assert!(matches!(err, DatatypeError::PartialElement { .. }), "{err}");
    // and back: 2 Pair (external32) -> 4 i32 (raw receiver swaps without MPI)
    let encp = encode(&pairs).unwrap();
    let mut back = [0i32; 5];
    let n = decode_message(
        &encp.sig(),
        encp.format,
        &encp.bytes,
        &mut back,
        MatchRule::BasicSequence,
    )
    .unwrap();
    assert_eq!((n, &back[..4]), (4, &ints[..]));
    println!("mismatch / truncation / basic-sequence rule: ok");
}

fn byte_order() {
    let vals = [1.5f64, -2.25, f64::MAX, f64::MIN_POSITIVE, 0.0];
    let enc = encode(&vals).unwrap();
    assert_eq!(enc.format, WireFormat::native());
    assert!(
        matches!(enc.bytes, std::borrow::Cow::Borrowed(_)),
        "raw send is zero-copy"
    );
    let be = encode_as(&vals, Some(WireFormat::RawBe)).unwrap();
    let expect: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
    assert_eq!(&be.bytes[..], &expect[..]);
    let mut out = [0f64; 5];
    decode_into(WireFormat::RawBe, &be.bytes, 5, &mut out).unwrap();
    assert_eq!(out, vals);
    let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut out = [0f64; 5];
    decode_into(WireFormat::RawLe, &le, 5, &mut out).unwrap();
    assert_eq!(out, vals);
    // u16 / i32 / bool via RawBe
    let s = [0x0102u16, 0xfffe];
    let mut o = [0u16; 2];
    decode_into(WireFormat::RawBe, &[1, 2, 0xff, 0xfe], 2, &mut o).unwrap();
    assert_eq!(o, s);
    let b = [true, false, true];
    let e = encode_as(&b, Some(WireFormat::RawBe)).unwrap();
    let mut ob = [false; 3];
    decode_into(e.format, &e.bytes, 3, &mut ob).unwrap();
    assert_eq!(ob, b);
    // our hand-made external32 for raw types equals MPI's own
    for (name, dt, bytes) in [
        (
            "f64",
            // SAFETY: reads an rsmpi handle constant, set once MPI is initialised.
            unsafe { ffi::RSMPI_DOUBLE },
            encode_as(&vals, Some(WireFormat::External32))
                .unwrap()
                .bytes
                .into_owned(),
        ),
        (
            "i32",
            // SAFETY: reads an rsmpi handle constant, set once MPI is initialised.
            unsafe { ffi::RSMPI_INT32_T },
            encode_as(&[1i32, -2, i32::MAX], Some(WireFormat::External32))
                .unwrap()
                .bytes
                .into_owned(),
        ),
        (
            "bool",
            // SAFETY: reads an rsmpi handle constant, set once MPI is initialised.
            unsafe { ffi::RSMPI_C_BOOL },
            encode_as(&b, Some(WireFormat::External32))
                .unwrap()
                .bytes
                .into_owned(),
        ),
    ] {
        let n = bytes.len() / type_info_for(dt).external32_size_per_elem;
        let src: Vec<u8> = match name {
            "f64" => vals.iter().flat_map(|v| v.to_ne_bytes()).collect(),
            "i32" => [1i32, -2, i32::MAX]
                .iter()
                .flat_map(|v| v.to_ne_bytes())
                .collect(),
            _ => b.iter().map(|&v| v as u8).collect(),
        };
        // SAFETY: the buffer holds the count of elements of the datatype named.
        let mpi_bytes = unsafe { pack_external32(dt, n, src.as_ptr() as *const _) }.unwrap();
        assert_eq!(
            mpi_bytes, bytes,
            "external32 of {name}: ours vs MPI_Pack_external"
        );
    }
    println!("byte order / RawBe / external32 fast path: ok");
}

/// A type of absolute addresses sent from and received at `MPI_BOTTOM` (a
/// null buffer), in both wire formats: the elements land at their
/// addresses (MPICH's MPI_Pack/MPI_Unpack refuse a null buffer; the layer
/// goes around it).
fn at_bottom() {
    let src: [i32; 4] = [7, -8, 9, i32::MIN];
    let mut dst = [0i32; 4];
    let hindexed = |a: &[i32; 4]| {
        let disps: Vec<ffi::MPI_Aint> = [3usize, 1]
            .iter()
            .map(|&i| std::ptr::addr_of!(a[i]) as ffi::MPI_Aint)
            .collect();
        let mut ty = i32::equivalent_datatype().as_raw();
        // SAFETY: two displacements; an out-handle, committed, freed below.
        unsafe {
            ffi::MPI_Type_create_hindexed_block(
                2,
                1,
                disps.as_ptr(),
                i32::equivalent_datatype().as_raw(),
                &mut ty,
            );
            ffi::MPI_Type_commit(&mut ty);
        }
        ty
    };
    let (mut sty, mut rty) = (hindexed(&src), hindexed(&dst));
    let info = datatype_info(sty).unwrap();
    // SAFETY: `sty` holds the absolute addresses of `src`'s elements.
    let enc = unsafe { encode_raw_with(&info, sty, 1, std::ptr::null()) }.unwrap();
    // SAFETY: as above.
    let external = unsafe { pack_external32(sty, 1, std::ptr::null()) }.unwrap();
    for (format, bytes) in [
        (enc.format, enc.bytes.to_vec()),
        (WireFormat::External32, external),
    ] {
        dst = [0; 4];
        let rinfo = datatype_info(rty).unwrap();
        // SAFETY: `rty` holds the absolute addresses of `dst`'s elements.
        let n = unsafe { decode_raw_with(&rinfo, rty, format, &bytes, 1, std::ptr::null_mut()) }
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(dst, [0, -8, 0, i32::MIN], "{format:?}");
    }
    // SAFETY: our types.
    unsafe {
        ffi::MPI_Type_free(&mut sty);
        ffi::MPI_Type_free(&mut rty);
    }
    println!("MPI_BOTTOM with absolute addresses: ok");
}

fn is_mpich() -> bool {
    mpi::environment::library_version()
        .unwrap_or_default()
        .contains("MPICH")
}

fn type_info_for(dt: ffi::MPI_Datatype) -> TypeInfo {
    datatype_info(dt).unwrap()
}

#[test]
fn datatype_layer() {
    let universe = mpi::initialize().expect("MPI init");
    // errors before init are reported, not UB
    primitives();
    padded_struct();
    strided_vector();
    mismatches();
    byte_order();
    at_bottom();
    drop(universe);
}
