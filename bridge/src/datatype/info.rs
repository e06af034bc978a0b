//! What the datatype layer knows about one element of a datatype
//! ([`TypeInfo`]): computed from MPI once per Rust type and cached, or per
//! call for a raw datatype handle; and the receive-side matching rules.

use std::any::TypeId;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;

use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::raw::AsRaw;

use super::basic::BasicType;
use super::error::{mpi_call, DatatypeError, Result};
use super::pack::external32_size;
use super::signature::{self, basic_count, hash_runs, primitive_root, Run, RunsDisplay};
use crate::format::WireFormat;
use crate::sync::lock;

/// Which type-matching rule to apply on receive (see module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchRule {
    /// Per-element signatures must be equal.
    #[default]
    ExactElement,
    /// The message's basic sequence must be a whole-element prefix of the
    /// receive buffer's (MPI semantics).
    BasicSequence,
}

/// Everything the datatype layer knows about one element of a datatype.
#[derive(Debug, Clone)]
pub struct TypeInfo {
    /// Stable hash of `runs` ([`hash_runs`]).
    pub signature: u64,
    /// Normalized basic-type runs of ONE element, in typemap order.
    pub runs: Vec<Run>,
    /// Number of basic elements in one element.
    pub basic_count_per_elem: u64,
    /// `Some(b)` when the datatype is a single predefined basic type.
    pub contiguous_basic: Option<BasicType>,
    /// Whether the raw fast path is used (see module docs).
    pub raw: bool,
    /// Byte-swap unit for the raw path (0 when `!raw`).
    pub swap_unit: usize,
    /// Bytes of data in one element (`MPI_Type_size`, gaps excluded).
    pub data_size_per_elem: usize,
    /// Distance between consecutive elements in memory (extent; for
    /// `Equivalence` types `size_of::<T>()`).
    pub extent: usize,
    /// Wire bytes per element in the format [`encode`](super::encode) chooses.
    pub wire_size_per_elem: usize,
    /// Bytes per element in the External32 wire format (basics at their
    /// native sizes, see the module docs).
    pub external32_size_per_elem: usize,
    /// Hash of the primitive root of `runs` (see [`MatchRule::BasicSequence`]).
    pub root_signature: u64,
    /// How many roots one element consists of.
    pub root_reps_per_elem: u64,
    /// External32 is produced by `MPI_Pack` (native) + our own per-basic
    /// byte swapping (true: every type but one), or by `MPI_Pack_external`
    /// (false: only a type holding `long double` on a non-x86 host).
    pub external32_by_swapping: bool,
    /// Per-element byte-swap program: (unit, bytes) segments in typemap order.
    pub(crate) swap_program: Vec<(usize, usize)>,
    /// The native size of every basic type in `runs` (a message that ends
    /// inside an element is cut by them, `partial`).
    pub(crate) basic_sizes: std::collections::BTreeMap<BasicType, usize>,
}

impl TypeInfo {
    /// The format [`encode`](super::encode) produces for this type on this host.
    pub fn preferred_format(&self) -> WireFormat {
        if self.raw {
            WireFormat::native()
        } else {
            WireFormat::External32
        }
    }

    /// Payload length in bytes of `count` elements in `format`.
    pub fn payload_len(&self, format: WireFormat, count: usize) -> Result<usize> {
        let per = if format.is_raw() {
            self.data_size_per_elem
        } else {
            self.external32_size_per_elem
        };
        per.checked_mul(count).ok_or(DatatypeError::Overflow)
    }

    /// The signature header of a message of `count` elements of this type.
    pub fn message_sig(&self, count: usize) -> MessageSig {
        MessageSig {
            signature: self.signature,
            count: count as u64,
            root_signature: self.root_signature,
            root_reps: self.root_reps_per_elem.saturating_mul(count as u64),
        }
    }

    /// Checks a message as the wire describes it (the sender's per-element
    /// signature, its element count and payload bytes) against this receive
    /// type with room for `capacity` elements; returns how many receive
    /// elements it fills. MPI 4.0 §3.3.1: the basic-type sequences must
    /// agree, so besides an equal signature this accepts a message whose
    /// elements are one root of this type each (10 `MPI_INT` into
    /// `vector(10,1,3,MPI_INT)`) and elements of `k` roots each (a vector
    /// of ints into ints; three structs in one type into structs), the `k`
    /// taken from the sender's element size and confirmed by the hash.
    /// The sender's element size must be this host's: a type whose size
    /// differs between the two hosts is refused, never reinterpreted.
    ///
    /// `MPI_PACKED` as MPI says: any message can be received as
    /// `MPI_PACKED`, and packed data as any type (the program vouches for
    /// its contents, as in MPI), when the bytes are in this host's native
    /// representation — raw, in its byte order — which is what this
    /// implementation's `MPI_Unpack` reads and `MPI_Pack` wrote.
    pub fn match_wire(
        &self,
        signature: u64,
        count: u64,
        bytes: u64,
        format: WireFormat,
        capacity: usize,
    ) -> Result<usize> {
        // No bytes: the message's type signature is empty (a count of 0, or
        // elements of a type with no basic elements, `contiguous(0, …)`),
        // and the empty sequence matches any receive, which gets nothing.
        if count == 0 || bytes == 0 {
            return Ok(0);
        }
        let packed_message = hash_runs(&[Run {
            basic: BasicType::Packed,
            count: bytes / count,
        }]) == signature;
        if packed_message != self.is_packed() {
            if format != WireFormat::native() {
                return Err(DatatypeError::PackedNotNative { format });
            }
            let per = self.data_size_per_elem as u64;
            if per == 0 || !bytes.is_multiple_of(per) {
                return Err(DatatypeError::PartialElement {
                    root_reps: bytes,
                    per_elem: per,
                });
            }
            return self.fits(bytes / per, capacity);
        }
        let size_error = |sender_elem: u64, receiver_elem: usize| DatatypeError::SizeMismatch {
            sender_elem,
            receiver_elem,
            receiver_type: self.describe(),
        };
        if !bytes.is_multiple_of(count) {
            return Err(size_error(bytes / count, self.data_size_per_elem));
        }
        let sender_elem = bytes / count;
        let per_root = self
            .data_size_per_elem
            .checked_div(usize::try_from(self.root_reps_per_elem).unwrap_or(0))
            .unwrap_or(0);
        let root_reps = if signature == self.signature {
            if sender_elem != self.data_size_per_elem as u64 {
                return Err(size_error(sender_elem, self.data_size_per_elem));
            }
            return self.fits(count, capacity);
        } else if signature == self.root_signature {
            if sender_elem != per_root as u64 {
                return Err(size_error(sender_elem, per_root));
            }
            count
        } else {
            match self.root_multiple(signature, sender_elem, per_root) {
                Some(k) => count.checked_mul(k).ok_or(DatatypeError::Overflow)?,
                None => {
                    return Err(DatatypeError::SignatureMismatch {
                        message: signature,
                        message_root: 0,
                        message_type: signature::name_signature(signature, sender_elem)
                            .unwrap_or_else(|| "of another type".into()),
                        receiver: self.signature,
                        receiver_root: self.root_signature,
                        receiver_type: self.describe(),
                    })
                }
            }
        };
        if self.root_reps_per_elem == 0 || !root_reps.is_multiple_of(self.root_reps_per_elem) {
            return Err(DatatypeError::PartialElement {
                root_reps,
                per_elem: self.root_reps_per_elem,
            });
        }
        self.fits(root_reps / self.root_reps_per_elem, capacity)
    }

    /// Whether this is `MPI_PACKED` (or a contiguous run of it).
    pub(crate) fn is_packed(&self) -> bool {
        matches!(
            self.runs[..],
            [Run {
                basic: BasicType::Packed,
                ..
            }]
        )
    }

    /// `n` receive elements, unless more than `capacity`.
    fn fits(&self, n: u64, capacity: usize) -> Result<usize> {
        let n = usize::try_from(n).map_err(|_| DatatypeError::Overflow)?;
        if n > capacity {
            return Err(DatatypeError::Truncated {
                incoming: n,
                capacity,
            });
        }
        Ok(n)
    }

    /// The `k` for which the sender's element (`sender_elem` bytes with
    /// signature `signature`) is `k` roots of this type, `per_root` bytes
    /// each here: a vector of ints for a receive of ints, three structs in
    /// one contiguous type for a receive of such structs.
    fn root_multiple(&self, signature: u64, sender_elem: u64, per_root: usize) -> Option<u64> {
        let per_root = u64::try_from(per_root).ok().filter(|&p| p > 0)?;
        if !sender_elem.is_multiple_of(per_root) {
            return None;
        }
        let k = sender_elem / per_root;
        let (root, _) = primitive_root(&self.runs);
        let mut runs = Vec::new();
        // bounded: push_repeated refuses more than MAX_RUNS runs
        signature::push_repeated(&mut runs, &root, k).ok()?;
        (k > 0 && hash_runs(&runs) == signature).then_some(k)
    }

    /// Human-readable basic sequence, e.g. `[u8, f64, i32]`.
    pub fn describe(&self) -> String {
        RunsDisplay(&self.runs).to_string()
    }

    /// Check an incoming message against this (receive) type; returns the
    /// number of receive elements the message fills.
    pub fn match_message(
        &self,
        msg: &MessageSig,
        capacity: usize,
        rule: MatchRule,
    ) -> Result<usize> {
        let n = if msg.count == 0 || msg.signature == hash_runs(&[]) {
            // An empty type signature (see `match_wire`).
            0
        } else if msg.signature == self.signature {
            usize::try_from(msg.count).map_err(|_| DatatypeError::Overflow)?
        } else if rule == MatchRule::BasicSequence
            && msg.root_signature == self.root_signature
            && self.root_reps_per_elem > 0
        {
            if !msg.root_reps.is_multiple_of(self.root_reps_per_elem) {
                return Err(DatatypeError::PartialElement {
                    root_reps: msg.root_reps,
                    per_elem: self.root_reps_per_elem,
                });
            }
            usize::try_from(msg.root_reps / self.root_reps_per_elem)
                .map_err(|_| DatatypeError::Overflow)?
        } else {
            return Err(DatatypeError::SignatureMismatch {
                message: msg.signature,
                message_root: msg.root_signature,
                message_type: "of another type".into(),
                receiver: self.signature,
                receiver_root: self.root_signature,
                receiver_type: self.describe(),
            });
        };
        if n > capacity {
            return Err(DatatypeError::Truncated {
                incoming: n,
                capacity,
            });
        }
        Ok(n)
    }
}

/// The type-signature header that travels with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageSig {
    /// Per-element signature of the sender's type.
    pub signature: u64,
    /// Number of sender elements.
    pub count: u64,
    /// Root signature of the sender's type.
    pub root_signature: u64,
    /// Total root repetitions in the message (`count * root_reps_per_elem`).
    pub root_reps: u64,
}

/// A datatype handle that can live in a global (MPI handles are plain
/// values; Open MPI's are pointers, hence not `Send` by default).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handle(pub(crate) ffi::MPI_Datatype);
// SAFETY: an MPI datatype handle is a plain value; MPI calls on it are made under the threading level the application chose, as for any rsmpi handle.
unsafe impl Send for Handle {}
// SAFETY: sharing the handle only copies the value; nothing is reached
// through it without an MPI call (see Send above).
unsafe impl Sync for Handle {}

pub(crate) struct Cached {
    pub(crate) info: TypeInfo,
    /// A resized copy of `T`'s datatype when its lb/extent disagree with
    /// `size_of::<T>()` (so that element `i` is at `ptr + i*size_of::<T>()`).
    pub(crate) resized: Option<Handle>,
}

fn cache() -> &'static Mutex<HashMap<TypeId, &'static Cached>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<TypeId, &'static Cached>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn extent_of(dt: ffi::MPI_Datatype) -> Result<(isize, isize)> {
    let (mut lb, mut ext): (ffi::MPI_Aint, ffi::MPI_Aint) = (0, 0);
    // SAFETY: the datatype handle is valid; `lb` and `ext` are live out-parameters.
    mpi_call("MPI_Type_get_extent", unsafe {
        ffi::MPI_Type_get_extent(dt, &mut lb, &mut ext)
    })?;
    // MPI_Aint is isize under Open MPI, i64 under MPICH.
    #[allow(clippy::unnecessary_cast)]
    Ok((lb as isize, ext as isize))
}

fn compute_info(dt: ffi::MPI_Datatype, extent: usize) -> Result<TypeInfo> {
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return Err(DatatypeError::NotInitialized);
    }
    let flat = signature::flatten_with_sizes(dt)?;
    let (runs, basic_sizes) = (flat.runs, flat.sizes);
    let signature = hash_runs(&runs);
    let (root, root_reps_per_elem) = primitive_root(&runs);
    let basic_count_per_elem = basic_count(&runs);
    let data_size_per_elem = signature::type_size(dt)? as usize;

    // The wire form of a derived type is its basics back to back, each at
    // its native size on the sender, big-endian (external32's layout, but
    // with this host's sizes: MPI's own external32 is not used, as MPICH
    // 4.0 and Open MPI disagree on `MPI_LONG` and MPICH aborts on pairs).
    let mut program: Vec<(usize, usize)> = Vec::new();
    let mut native_sum: usize = 0;
    let mut by_swapping = true;
    for r in &runs {
        let count = usize::try_from(r.count).map_err(|_| DatatypeError::Overflow)?;
        let Some(&size) = basic_sizes.get(&r.basic) else {
            by_swapping = false;
            continue;
        };
        let bytes = size.checked_mul(count).ok_or(DatatypeError::Overflow)?;
        native_sum = native_sum
            .checked_add(bytes)
            .ok_or(DatatypeError::Overflow)?;
        match r.basic.swap_unit(size) {
            Some(u) => match program.last_mut() {
                Some(last) if last.0 == u || (last.0 <= 1 && u <= 1) => last.1 += bytes,
                _ => program.push((u, bytes)),
            },
            None => by_swapping = false,
        }
    }
    if native_sum != data_size_per_elem {
        by_swapping = false;
    }
    let external32_size_per_elem = if by_swapping {
        data_size_per_elem
    } else {
        // only `long double` off x86 (see BasicType::swap_unit)
        external32_size(dt, 1)?
    };
    let contiguous_basic = match runs.as_slice() {
        [only] if basic_count_per_elem == 1 => {
            // single predefined type? (a derived type wrapping one basic also has
            // basic_count 1 but may have a gap/lb; require extent == size, lb == 0)
            let (lb, ext) = extent_of(dt)?;
            (lb == 0 && ext as usize == data_size_per_elem && extent == data_size_per_elem)
                .then_some(only.basic)
        }
        _ => None,
    };
    let raw =
        contiguous_basic.is_some() && by_swapping && program.len() == 1 && data_size_per_elem > 0;
    let swap_unit = program.first().filter(|_| raw).map_or(0, |p| p.0);
    Ok(TypeInfo {
        signature,
        root_signature: hash_runs(&root),
        root_reps_per_elem,
        runs,
        basic_count_per_elem,
        contiguous_basic,
        raw,
        swap_unit,
        data_size_per_elem,
        extent,
        wire_size_per_elem: if raw {
            data_size_per_elem
        } else {
            external32_size_per_elem
        },
        external32_size_per_elem,
        external32_by_swapping: by_swapping,
        swap_program: program,
        basic_sizes,
    })
}

thread_local! {
    /// The type this thread looked up last. A typed send or receive asks
    /// for its type's description two or three times per message, and the
    /// shared cache's lock was the Rust API's one cost per message that the
    /// C library does not pay (issue 18: the two within 5 % of each other).
    static LAST: Cell<Option<(TypeId, &'static Cached)>> = const { Cell::new(None) };
}

pub(crate) fn cached<T: Equivalence + 'static>() -> Result<&'static Cached> {
    let id = TypeId::of::<T>();
    if let Some((last, c)) = LAST.with(Cell::get) {
        if last == id {
            return Ok(c);
        }
    }
    let c = cached_shared::<T>(id)?;
    LAST.with(|l| l.set(Some((id, c))));
    Ok(c)
}

/// [`cached`] through the process-wide cache (computed on first use).
fn cached_shared<T: Equivalence + 'static>(id: TypeId) -> Result<&'static Cached> {
    if let Some(c) = lock(cache()).get(&id) {
        return Ok(c);
    }
    // Compute outside the lock only in the sense of correctness; holding it
    // serializes first-time MPI queries, which is what we want.
    let mut map = lock(cache());
    if let Some(c) = map.get(&id) {
        return Ok(c);
    }
    let owner = T::equivalent_datatype();
    let dt = owner.as_raw();
    let size = std::mem::size_of::<T>();
    let (lb, ext) = extent_of(dt)?;
    let resized = if lb != 0 || ext as usize != size {
        // SAFETY: reading rsmpi's predefined null-handle static.
        let mut newtype: ffi::MPI_Datatype = unsafe { ffi::RSMPI_DATATYPE_NULL };
        // SAFETY: `dt` is a valid committed datatype; `newtype` is a live out-parameter.
        mpi_call("MPI_Type_create_resized", unsafe {
            ffi::MPI_Type_create_resized(dt, 0, size as ffi::MPI_Aint, &mut newtype)
        })?;
        // SAFETY: `newtype` was just created by MPI_Type_create_resized.
        mpi_call("MPI_Type_commit", unsafe {
            ffi::MPI_Type_commit(&mut newtype)
        })?;
        Some(Handle(newtype))
    } else {
        None
    };
    let info = compute_info(resized.map(|h| h.0).unwrap_or(dt), size)?;
    let leaked: &'static Cached = Box::leak(Box::new(Cached { info, resized }));
    map.insert(id, leaked);
    Ok(leaked)
}

/// Signature and layout information of the Rust type `T` (queried from MPI
/// once, then cached).
pub fn type_info<T: Equivalence + 'static>() -> Result<&'static TypeInfo> {
    Ok(&cached::<T>()?.info)
}

/// Signature and layout information of an arbitrary committed datatype
/// handle (e.g. a `UserDatatype` vector). Not cached (handles can be freed
/// and reused). The element stride is the datatype's extent.
pub fn datatype_info(dt: ffi::MPI_Datatype) -> Result<TypeInfo> {
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return Err(DatatypeError::NotInitialized);
    }
    let (_, ext) = extent_of(dt)?;
    compute_info(dt, ext.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use BasicType::*;

    const N: WireFormat = WireFormat::native();

    /// The description of a gapless type of `runs`, each basic `size` bytes.
    fn info(runs: &[(BasicType, u64)], size: usize) -> TypeInfo {
        let runs: Vec<Run> = runs
            .iter()
            .map(|&(basic, count)| Run { basic, count })
            .collect();
        let (root, root_reps_per_elem) = primitive_root(&runs);
        let data = size * basic_count(&runs) as usize;
        TypeInfo {
            signature: hash_runs(&runs),
            root_signature: hash_runs(&root),
            root_reps_per_elem,
            basic_count_per_elem: basic_count(&runs),
            contiguous_basic: None,
            raw: false,
            swap_unit: 0,
            data_size_per_elem: data,
            extent: data,
            wire_size_per_elem: data,
            external32_size_per_elem: data,
            external32_by_swapping: true,
            swap_program: vec![(size, data)],
            basic_sizes: runs.iter().map(|r| (r.basic, size)).collect(),
            runs,
        }
    }

    #[test]
    fn a_vector_of_ints_matches_ints_and_back() {
        let int = info(&[(Int, 1)], 4);
        let vec10 = info(&[(Int, 10)], 4);
        // vector(10,1,3,MPI_INT) x1 into 13 MPI_INT: 10 arrive
        assert_eq!(int.match_wire(vec10.signature, 1, 40, N, 13).unwrap(), 10);
        // 10 MPI_INT into 2 vectors: one fills
        assert_eq!(vec10.match_wire(int.signature, 10, 40, N, 2).unwrap(), 1);
        // 3 x contiguous(2, MPI_INT) into 6 MPI_INT, and 2INT pairs alike
        let pair = info(&[(Int, 2)], 4);
        assert_eq!(int.match_wire(pair.signature, 3, 24, N, 8).unwrap(), 6);
        assert_eq!(pair.match_wire(int.signature, 6, 24, N, 4).unwrap(), 3);
        // contiguous(3, struct {int; double}) x2 into 6 such structs
        let s = info(&[(Int, 1), (F64, 1)], 6);
        let three = info(
            &[(Int, 1), (F64, 1), (Int, 1), (F64, 1), (Int, 1), (F64, 1)],
            6,
        );
        assert_eq!(s.match_wire(three.signature, 2, 72, N, 6).unwrap(), 6);
        assert_eq!(three.match_wire(s.signature, 6, 72, N, 2).unwrap(), 2);
    }

    #[test]
    fn an_empty_message_matches_any_receive() {
        // MPICH's coll/alltoallw_zeros: one `contiguous(0, MPI_INT)` sent,
        // zero MPI_INT received (both type signatures empty)
        let int = info(&[(Int, 1)], 4);
        let empty = info(&[], 4);
        assert_eq!(int.match_wire(empty.signature, 1, 0, N, 0).unwrap(), 0);
        assert_eq!(int.match_wire(int.signature, 0, 0, N, 0).unwrap(), 0);
        let msg = MessageSig {
            signature: empty.signature,
            count: 3,
            root_signature: empty.root_signature,
            root_reps: 0,
        };
        assert_eq!(
            int.match_message(&msg, 0, MatchRule::BasicSequence)
                .unwrap(),
            0
        );
        // an element of a non-empty type still needs its bytes
        assert!(int.match_wire(int.signature, 1, 4, N, 0).is_err());
    }

    #[test]
    fn what_mpi_forbids_is_refused_with_the_reason() {
        let int = info(&[(Int, 1)], 4);
        let float = info(&[(F32, 1)], 4);
        let long = info(&[(Long, 1)], 8);
        let pair = info(&[(Int, 2)], 4);
        let e = float.match_wire(int.signature, 4, 16, N, 4).unwrap_err();
        assert!(
            e.to_string().contains("[MPI_INT]") && e.to_string().contains("[f32]"),
            "{e}"
        );
        assert!(matches!(
            int.match_wire(long.signature, 2, 16, N, 8),
            Err(DatatypeError::SignatureMismatch { .. })
        ));
        assert!(matches!(
            pair.match_wire(int.signature, 5, 20, N, 4),
            Err(DatatypeError::PartialElement { .. })
        ));
        assert!(matches!(
            int.match_wire(int.signature, 5, 20, N, 4),
            Err(DatatypeError::Truncated {
                incoming: 5,
                capacity: 4
            })
        ));
        // MPI_LONG of 4 bytes at the sender, 8 here: refused, not reinterpreted
        let e = long.match_wire(long.signature, 3, 12, N, 3).unwrap_err();
        assert!(matches!(
            e,
            DatatypeError::SizeMismatch {
                sender_elem: 4,
                receiver_elem: 8,
                ..
            }
        ));
        assert!(e.to_string().contains("4 bytes"), "{e}");
        // MPI_PACKED takes any message in this host's representation, and
        // packed data goes into any type
        let packed = info(&[(Packed, 1)], 1);
        assert_eq!(packed.match_wire(long.signature, 3, 24, N, 64).unwrap(), 24);
        assert_eq!(int.match_wire(packed.signature, 16, 16, N, 4).unwrap(), 4);
        assert!(matches!(
            packed.match_wire(long.signature, 3, 24, WireFormat::External32, 64),
            Err(DatatypeError::PackedNotNative { .. })
        ));
        assert!(matches!(
            int.match_wire(packed.signature, 6, 6, N, 4),
            Err(DatatypeError::PartialElement { .. })
        ));
        // an empty message matches any receive
        assert_eq!(float.match_wire(int.signature, 0, 0, N, 0).unwrap(), 0);
    }

    #[test]
    fn a_message_that_ends_inside_an_element_is_a_prefix_cut_on_a_basic() {
        use crate::datatype::Partial;
        let int = info(&[(Int, 1)], 4);
        let pair = info(&[(Int, 2)], 4);
        // 5 MPI_INT into contiguous(2, MPI_INT): 2 pairs and one int
        assert!(matches!(
            pair.match_wire(int.signature, 5, 20, N, 3),
            Err(DatatypeError::PartialElement { .. })
        ));
        let p = pair.match_partial(int.signature, 5, 20, N, 3).unwrap();
        assert_eq!(
            p,
            Partial {
                whole: 2,
                rest_bytes: 4,
                rest_basics: 1
            }
        );
        assert_eq!(p.bytes(&pair), 20);
        // ... but not into 2 pairs: the third is needed
        assert!(matches!(
            pair.match_partial(int.signature, 5, 20, N, 2),
            Err(DatatypeError::Truncated { incoming: 3, .. })
        ));
        // struct {int, 17 chars} into struct {int, 256 chars} (one size
        // for every basic here: 4 bytes)
        let small = info(&[(Int, 1), (Char, 17)], 4);
        let big = info(&[(Int, 1), (Char, 256)], 4);
        let p = big.match_partial(small.signature, 1, 72, N, 1).unwrap();
        assert_eq!((p.whole, p.rest_bytes, p.rest_basics), (0, 72, 18));
        // two of them: the second element's int is no char
        assert!(big.match_partial(small.signature, 2, 144, N, 1).is_err());
        // a message that is no prefix: refused
        let float = info(&[(F32, 1)], 4);
        assert!(pair.match_partial(float.signature, 3, 12, N, 3).is_err());
        // ending inside a basic: refused
        assert!(pair.match_partial(int.signature, 1, 6, N, 3).is_err());
        // packed data is cut by the basics' sizes, in this host's order only
        let packed = info(&[(Packed, 1)], 1);
        let p = big.match_partial(packed.signature, 12, 12, N, 1).unwrap();
        assert_eq!((p.whole, p.rest_basics), (0, 3));
        assert!(matches!(
            big.match_partial(packed.signature, 12, 12, WireFormat::External32, 1),
            Err(DatatypeError::PackedNotNative { .. })
        ));
        // whole elements are not partial
        assert!(pair.match_partial(int.signature, 4, 16, N, 3).is_err());
    }
}
