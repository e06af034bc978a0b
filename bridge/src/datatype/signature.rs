//! Type signatures: flattening an MPI datatype into its (normalized,
//! run-length encoded) sequence of basic types, hashing it, and computing the
//! "primitive root" used by the matching-basic-sequence rule.

use std::collections::BTreeMap;
use std::fmt;
use std::os::raw::c_int;
use std::sync::OnceLock;

use mpi::ffi;

use super::basic::{basics_of_named, BasicType};
use super::error::{mpi_call, DatatypeError, Result};
use crate::hash::{fnv1a64, FNV_OFFSET};

/// A run of `count` consecutive basic elements of type `basic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Run {
    /// The basic type.
    pub basic: BasicType,
    /// How many in a row (always > 0 in a normalized run list).
    pub count: u64,
}

/// Upper bound on the number of runs in one element's signature. Types
/// needing more (e.g. huge arrays of heterogeneous structs) are rejected
/// rather than consuming unbounded memory.
pub const MAX_RUNS: usize = 1 << 20;

/// Append a run, merging with the last one if the basic type is equal.
pub(crate) fn push_run(runs: &mut Vec<Run>, basic: BasicType, count: u64) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    if let Some(last) = runs.last_mut() {
        if last.basic == basic {
            last.count = last
                .count
                .checked_add(count)
                .ok_or(DatatypeError::Overflow)?;
            return Ok(());
        }
    }
    if runs.len() >= MAX_RUNS {
        return Err(DatatypeError::Unsupported(format!(
            "type signature has more than {MAX_RUNS} runs"
        )));
    }
    runs.push(Run { basic, count });
    Ok(())
}

/// Append `reps` repetitions of `child` (already normalized) to `out`.
pub(crate) fn push_repeated(out: &mut Vec<Run>, child: &[Run], reps: u64) -> Result<()> {
    if reps == 0 || child.is_empty() {
        return Ok(());
    }
    if let [only] = child {
        let n = only
            .count
            .checked_mul(reps)
            .ok_or(DatatypeError::Overflow)?;
        return push_run(out, only.basic, n);
    }
    if (child.len() as u64).saturating_mul(reps) > MAX_RUNS as u64 {
        return Err(DatatypeError::Unsupported(format!(
            "type signature has more than {MAX_RUNS} runs"
        )));
    }
    for _ in 0..reps {
        for r in child {
            push_run(out, r.basic, r.count)?;
        }
    }
    Ok(())
}

/// Human-readable rendering such as `[u8, f64, i32]` or `[f64 x 4]`.
pub struct RunsDisplay<'a>(pub &'a [Run]);

impl fmt::Display for RunsDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if r.count == 1 {
                write!(f, "{}", r.basic)?;
            } else {
                write!(f, "{} x {}", r.basic, r.count)?;
            }
        }
        f.write_str("]")
    }
}

/// Stable hash of a normalized run list: FNV-1a over the ASCII tag
/// `"isthmus-sig-v1"` followed by, per run, the basic type's one-byte code
/// and the run count as u64 little-endian.
pub fn hash_runs(runs: &[Run]) -> u64 {
    let mut h = fnv1a64(b"isthmus-sig-v1", FNV_OFFSET);
    for r in runs {
        h = fnv1a64(&[r.basic.code()], h);
        h = fnv1a64(&r.count.to_le_bytes(), h);
    }
    h
}

/// Names the element type behind `signature` when it is `k` of one basic
/// type in `elem_bytes` bytes (`[MPI_LONG]`, `[MPI_INT x 10]`), for error
/// messages; the search is bounded (at most 4096 counts per basic type).
pub fn name_signature(signature: u64, elem_bytes: u64) -> Option<String> {
    let most = elem_bytes.clamp(1, 4096);
    BasicType::ALL.iter().find_map(|&basic| {
        (1..=most).find_map(|count| {
            let runs = [Run { basic, count }];
            (hash_runs(&runs) == signature).then(|| RunsDisplay(&runs).to_string())
        })
    })
}

/// Total number of basic elements in a run list.
pub fn basic_count(runs: &[Run]) -> u64 {
    runs.iter().map(|r| r.count).sum()
}

/// Cursor over the expanded basic sequence of a run list.
#[derive(Clone, Copy)]
struct Cursor {
    run: usize,
    off: u64,
}

impl Cursor {
    fn at(runs: &[Run], mut pos: u64) -> Cursor {
        let mut run = 0;
        while let Some(r) = runs.get(run).filter(|r| pos >= r.count) {
            pos -= r.count;
            run += 1;
        }
        Cursor { run, off: pos }
    }
    /// What is left of the current run (0 past the end).
    fn left(&self, runs: &[Run]) -> u64 {
        runs.get(self.run).map_or(0, |r| r.count - self.off)
    }
    fn advance(&mut self, runs: &[Run], n: u64) {
        self.off += n;
        if runs.get(self.run).is_some_and(|r| self.off == r.count) {
            self.run += 1;
            self.off = 0;
        }
    }
}

/// Is the expanded sequence periodic with period `p` (s[i] == s[i+p])?
fn is_periodic(runs: &[Run], total: u64, p: u64) -> bool {
    let mut a = Cursor::at(runs, 0);
    let mut b = Cursor::at(runs, p);
    let mut remaining = total - p;
    while remaining > 0 {
        match (runs.get(a.run), runs.get(b.run)) {
            (Some(x), Some(y)) if x.basic == y.basic => {}
            _ => return false,
        }
        let step = a.left(runs).min(b.left(runs)).min(remaining);
        a.advance(runs, step);
        b.advance(runs, step);
        remaining -= step;
    }
    true
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The primitive root of a basic sequence S: the shortest P with S = P^r.
/// Returns (normalized runs of P, r). For an empty sequence: (empty, 0).
pub fn primitive_root(runs: &[Run]) -> (Vec<Run>, u64) {
    let total = basic_count(runs);
    if total == 0 {
        return (Vec::new(), 0);
    }
    if let [only] = runs {
        return (
            vec![Run {
                basic: only.basic,
                count: 1,
            }],
            total,
        );
    }
    // r must divide the number of occurrences of every basic type.
    let mut per_type: std::collections::BTreeMap<BasicType, u64> = Default::default();
    for r in runs {
        *per_type.entry(r.basic).or_default() += r.count;
    }
    let g = per_type.values().fold(0, |acc, &c| gcd(acc, c));
    // divisors of g, largest first
    let mut divs = Vec::new();
    let mut d = 1;
    while d * d <= g {
        if g % d == 0 {
            divs.push(d);
            if d != g / d {
                divs.push(g / d);
            }
        }
        d += 1;
    }
    divs.sort_unstable_by(|a, b| b.cmp(a));
    for r in divs {
        let p = total / r;
        if r == 1 || is_periodic(runs, total, p) {
            // extract the first p basic elements
            let mut root = Vec::new();
            let mut need = p;
            for run in runs {
                if need == 0 {
                    break;
                }
                let take = run.count.min(need);
                root.push(Run {
                    basic: run.basic,
                    count: take,
                });
                need -= take;
            }
            return (root, r);
        }
    }
    unreachable!("r == 1 always succeeds")
}

/// The value this implementation uses for `MPI_COMBINER_NAMED` (Open MPI: 0,
/// MPICH: 1) — probed at runtime so the code is implementation-agnostic.
fn combiner_named() -> Result<c_int> {
    static NAMED: OnceLock<c_int> = OnceLock::new();
    if let Some(v) = NAMED.get() {
        return Ok(*v);
    }
    // SAFETY: reading rsmpi's predefined handle static.
    let env = envelope(unsafe { ffi::RSMPI_INT32_T })?;
    Ok(*NAMED.get_or_init(|| env.combiner))
}

struct Envelope {
    ni: c_int,
    na: c_int,
    nd: c_int,
    combiner: c_int,
}

fn envelope(dt: ffi::MPI_Datatype) -> Result<Envelope> {
    let (mut ni, mut na, mut nd, mut combiner) = (0, 0, 0, 0);
    // SAFETY: the datatype handle is valid; all four out-parameters are live.
    mpi_call("MPI_Type_get_envelope", unsafe {
        ffi::MPI_Type_get_envelope(dt, &mut ni, &mut na, &mut nd, &mut combiner)
    })?;
    Ok(Envelope {
        ni,
        na,
        nd,
        combiner,
    })
}

/// `MPI_Type_size` of a datatype (bytes of data, gaps excluded).
pub(crate) fn type_size(dt: ffi::MPI_Datatype) -> Result<u64> {
    let mut s: c_int = 0;
    // SAFETY: the datatype handle is valid; `s` is a live out-parameter.
    mpi_call("MPI_Type_size", unsafe { ffi::MPI_Type_size(dt, &mut s) })?;
    if s < 0 {
        return Err(DatatypeError::Unsupported(
            "MPI_Type_size returned MPI_UNDEFINED (type too large)".into(),
        ));
    }
    Ok(s as u64)
}

/// Child datatype handles returned by `MPI_Type_get_contents`; derived ones
/// are new handles that must be freed (predefined ones must not be).
struct Children {
    types: Vec<ffi::MPI_Datatype>,
    named: c_int,
}

impl Drop for Children {
    fn drop(&mut self) {
        for t in &mut self.types {
            if let Ok(env) = envelope(*t) {
                if env.combiner != self.named {
                    // SAFETY: `t` is a derived handle MPI_Type_get_contents returned for us to free (predefined ones are skipped).
                    unsafe { ffi::MPI_Type_free(t) };
                }
            }
        }
    }
}

/// Flattened signature plus the native size in bytes (`MPI_Type_size`) of
/// every basic type it contains, the components of pair types included.
pub(crate) struct Flat {
    pub runs: Vec<Run>,
    pub sizes: BTreeMap<BasicType, usize>,
}

/// Flatten a datatype to its normalized basic-type run list (the type
/// signature of ONE element of that datatype) plus the sizes of its basics.
///
/// Only two structural facts are needed:
/// * predefined types (`MPI_COMBINER_NAMED`) are identified by handle/name;
/// * a constructor with several child types is `MPI_Type_create_struct`
///   (ints = `[count, blocklengths...]`): concatenate the children;
/// * any constructor with ONE child type (dup, contiguous, (h)vector,
///   (h)indexed(_block), subarray, darray, resized, 1-field struct) repeats
///   the child's signature `size(type) / size(child)` times, because a
///   derived type's signature is a sequence of whole copies of its child's.
///
/// This avoids depending on the (implementation-specific) values of the
/// other `MPI_COMBINER_*` constants.
pub(crate) fn flatten_with_sizes(dt: ffi::MPI_Datatype) -> Result<Flat> {
    let mut flat = Flat {
        runs: Vec::new(),
        sizes: BTreeMap::new(),
    };
    let mut runs = Vec::new();
    flatten_into(dt, &mut runs, &mut flat.sizes, 0)?;
    flat.runs = runs;
    Ok(flat)
}

/// Records the native sizes of a predefined type's basics: a single basic
/// is the type's size; a pair type (`MPI_DOUBLE_INT`, `MPI_2INT`,
/// `MPI_2REAL`, …) holds a C `int` second unless both halves are alike.
/// MPI is not asked for external32 sizes: MPICH 4.0 and Open MPI disagree
/// on some (`MPI_LONG`) and MPICH aborts on others.
fn note_sizes(
    dt: ffi::MPI_Datatype,
    basics: &[BasicType],
    sizes: &mut BTreeMap<BasicType, usize>,
) -> Result<()> {
    let size = usize::try_from(type_size(dt)?).map_err(|_| DatatypeError::Overflow)?;
    let parts: Vec<(BasicType, usize)> = match basics {
        [b] => vec![(*b, size)],
        [a, b] if a == b => vec![(*a, size / 2)],
        [a, b] => {
            let int = std::mem::size_of::<std::os::raw::c_int>();
            vec![(*a, size.saturating_sub(int)), (*b, int)]
        }
        _ => Vec::new(),
    };
    for (b, n) in parts {
        match sizes.get(&b) {
            Some(&known) if known != n => {
                return Err(DatatypeError::Unsupported(format!(
                    "{b} is {known} bytes in one place and {n} in another"
                )))
            }
            _ => {
                sizes.insert(b, n);
            }
        }
    }
    Ok(())
}

fn flatten_into(
    dt: ffi::MPI_Datatype,
    out: &mut Vec<Run>,
    sizes: &mut BTreeMap<BasicType, usize>,
    depth: usize,
) -> Result<()> {
    if depth > 64 {
        return Err(DatatypeError::Unsupported(
            "datatype nesting deeper than 64".into(),
        ));
    }
    let named = combiner_named()?;
    let env = envelope(dt)?;
    if env.combiner == named {
        let basics = basics_of_named(dt)?;
        note_sizes(dt, &basics, sizes)?;
        for b in basics {
            push_run(out, b, 1)?;
        }
        return Ok(());
    }
    let mut ints = vec![0 as c_int; env.ni.max(0) as usize];
    let mut addrs = vec![0 as ffi::MPI_Aint; env.na.max(0) as usize];
    let mut types: Vec<ffi::MPI_Datatype> = Vec::with_capacity(env.nd.max(0) as usize);
    // SAFETY: the arrays have the capacities MPI_Type_get_envelope announced; `types` gets its length only after MPI filled it.
    mpi_call("MPI_Type_get_contents", unsafe {
        let rc = ffi::MPI_Type_get_contents(
            dt,
            env.ni,
            env.na,
            env.nd,
            ints.as_mut_ptr(),
            addrs.as_mut_ptr(),
            types.as_mut_ptr(),
        );
        if rc == 0 {
            types.set_len(env.nd.max(0) as usize);
        }
        rc
    })?;
    let children = Children { types, named };
    match children.types.as_slice() {
        [] => Err(DatatypeError::Unsupported(format!(
            "datatype with combiner {} has no child datatype (Fortran F90 types are not supported)",
            env.combiner
        ))),
        &[child_dt] => {
            let child_size = type_size(child_dt)?;
            let size = type_size(dt)?;
            if child_size == 0 || size == 0 {
                return Ok(());
            }
            if size % child_size != 0 {
                return Err(DatatypeError::Unsupported(format!(
                    "datatype size {size} is not a multiple of its child's size {child_size}"
                )));
            }
            let mut child = Vec::new();
            flatten_into(child_dt, &mut child, sizes, depth + 1)?;
            push_repeated(out, &child, size / child_size)
        }
        types => {
            let n = types.len();
            // MPI_Type_create_struct: ints = [count, blocklengths[count]]
            if ints.len() != n + 1 || ints.first().map(|&c| c as usize) != Some(n) {
                return Err(DatatypeError::Unsupported(format!(
                    "datatype with combiner {} and {n} children is not a struct",
                    env.combiner
                )));
            }
            for (&child_dt, &bl) in types.iter().zip(ints.iter().skip(1)) {
                if bl < 0 {
                    return Err(DatatypeError::Unsupported("negative blocklength".into()));
                }
                let mut child = Vec::new();
                flatten_into(child_dt, &mut child, sizes, depth + 1)?;
                push_repeated(out, &child, bl as u64)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BasicType::*;

    fn r(basic: BasicType, count: u64) -> Run {
        Run { basic, count }
    }

    #[test]
    fn roots() {
        assert_eq!(primitive_root(&[r(I32, 4)]), (vec![r(I32, 1)], 4));
        assert_eq!(primitive_root(&[]), (vec![], 0));
        let s = [r(U8, 1), r(F64, 1), r(I32, 1)];
        assert_eq!(primitive_root(&s), (s.to_vec(), 1));
        // a b a a b a  -> (a b a)^2
        let s = [r(I8, 1), r(I16, 1), r(I8, 2), r(I16, 1), r(I8, 1)];
        assert_eq!(primitive_root(&s), (vec![r(I8, 1), r(I16, 1), r(I8, 1)], 2));
        // (a a b)^3
        let s = [
            r(I8, 2),
            r(I16, 1),
            r(I8, 2),
            r(I16, 1),
            r(I8, 2),
            r(I16, 1),
        ];
        assert_eq!(primitive_root(&s), (vec![r(I8, 2), r(I16, 1)], 3));
        // not periodic although counts are divisible: a a b b
        let s = [r(I8, 2), r(I16, 2)];
        assert_eq!(primitive_root(&s), (s.to_vec(), 1));
    }

    #[test]
    fn hash_is_stable() {
        // Pinned value: changing it breaks the wire protocol.
        let h = hash_runs(&[r(F64, 1)]);
        assert_eq!(h, hash_runs(&[r(F64, 1)]));
        assert_ne!(h, hash_runs(&[r(I32, 1)]));
        assert_ne!(
            hash_runs(&[r(I32, 2)]),
            hash_runs(&[r(I32, 1), r(I32, 1)]).wrapping_add(1)
        );
    }

    #[test]
    fn normalization() {
        let mut v = Vec::new();
        push_repeated(&mut v, &[r(I32, 1), r(I32, 1)], 3).unwrap();
        assert_eq!(v, vec![r(I32, 6)]);
        let mut v = Vec::new();
        push_repeated(&mut v, &[r(I8, 1), r(I16, 1), r(I8, 1)], 2).unwrap();
        assert_eq!(v, vec![r(I8, 1), r(I16, 1), r(I8, 2), r(I16, 1), r(I8, 1)]);
    }
}
