//! The portable basic-type enumeration and the mapping from this MPI
//! implementation's predefined datatype handles onto it.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int};

use mpi::ffi;

use super::error::{mpi_call, DatatypeError, Result};

/// A basic (predefined, non-derived) MPI datatype, named portably.
///
/// The discriminants are part of the wire protocol (they feed the signature
/// hash): **never renumber, only append**.
///
/// MPI type-matching semantics are kept strict: `MPI_INT` ([`BasicType::Int`])
/// and `MPI_INT32_T` ([`BasicType::I32`]) are *different* basic types, exactly
/// as in the MPI standard, even though they have the same size on every
/// platform we care about. The Rust primitives map (via rsmpi) to the
/// fixed-width names (`i32` → `MPI_INT32_T` → `I32`), `f32`/`f64` to
/// `MPI_FLOAT`/`MPI_DOUBLE` (`F32`/`F64`) and `bool` to `MPI_C_BOOL` (`Bool`).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BasicType {
    /// `MPI_C_BOOL` (Rust `bool`)
    Bool = 1,
    /// `MPI_INT8_T`
    I8 = 2,
    /// `MPI_UINT8_T`
    U8 = 3,
    /// `MPI_INT16_T`
    I16 = 4,
    /// `MPI_UINT16_T`
    U16 = 5,
    /// `MPI_INT32_T`
    I32 = 6,
    /// `MPI_UINT32_T`
    U32 = 7,
    /// `MPI_INT64_T`
    I64 = 8,
    /// `MPI_UINT64_T`
    U64 = 9,
    /// `MPI_FLOAT` (Rust `f32`)
    F32 = 10,
    /// `MPI_DOUBLE` (Rust `f64`)
    F64 = 11,
    /// `MPI_C_FLOAT_COMPLEX` / `MPI_C_COMPLEX`
    ComplexF32 = 12,
    /// `MPI_C_DOUBLE_COMPLEX`
    ComplexF64 = 13,
    /// `MPI_CHAR` (C `char`)
    Char = 20,
    /// `MPI_SIGNED_CHAR`
    SignedChar = 21,
    /// `MPI_UNSIGNED_CHAR`
    UnsignedChar = 22,
    /// `MPI_BYTE`
    Byte = 23,
    /// `MPI_WCHAR`
    WChar = 24,
    /// `MPI_SHORT`
    Short = 25,
    /// `MPI_UNSIGNED_SHORT`
    UnsignedShort = 26,
    /// `MPI_INT`
    Int = 27,
    /// `MPI_UNSIGNED`
    Unsigned = 28,
    /// `MPI_LONG`
    Long = 29,
    /// `MPI_UNSIGNED_LONG`
    UnsignedLong = 30,
    /// `MPI_LONG_LONG_INT` / `MPI_LONG_LONG`
    LongLong = 31,
    /// `MPI_UNSIGNED_LONG_LONG`
    UnsignedLongLong = 32,
    /// `MPI_LONG_DOUBLE`
    LongDouble = 33,
    /// `MPI_C_LONG_DOUBLE_COMPLEX`
    ComplexLongDouble = 34,
    /// `MPI_AINT`
    Aint = 35,
    /// `MPI_OFFSET`
    Offset = 36,
    /// `MPI_COUNT`
    Count = 37,
    /// `MPI_PACKED`
    Packed = 38,
    /// `MPI_CXX_BOOL`
    CxxBool = 39,
    /// `MPI_INTEGER` (Fortran)
    FInteger = 50,
    /// `MPI_REAL` (Fortran)
    FReal = 51,
    /// `MPI_DOUBLE_PRECISION` (Fortran)
    FDoublePrecision = 52,
    /// `MPI_LOGICAL` (Fortran)
    FLogical = 53,
    /// `MPI_CHARACTER` (Fortran)
    FCharacter = 54,
    /// `MPI_COMPLEX` (Fortran)
    FComplex = 55,
    /// `MPI_DOUBLE_COMPLEX` (Fortran)
    FDoubleComplex = 56,
    /// `MPI_INTEGER1` (Fortran)
    FInteger1 = 57,
    /// `MPI_INTEGER2` (Fortran)
    FInteger2 = 58,
    /// `MPI_INTEGER4` (Fortran)
    FInteger4 = 59,
    /// `MPI_INTEGER8` (Fortran)
    FInteger8 = 60,
    /// `MPI_INTEGER16` (Fortran)
    FInteger16 = 61,
    /// `MPI_REAL2` (Fortran)
    FReal2 = 62,
    /// `MPI_REAL4` (Fortran)
    FReal4 = 63,
    /// `MPI_REAL8` (Fortran)
    FReal8 = 64,
    /// `MPI_REAL16` (Fortran)
    FReal16 = 65,
    /// `MPI_COMPLEX4` (Fortran)
    FComplex4 = 66,
    /// `MPI_COMPLEX8` (Fortran)
    FComplex8 = 67,
    /// `MPI_COMPLEX16` (Fortran)
    FComplex16 = 68,
    /// `MPI_COMPLEX32` (Fortran)
    FComplex32 = 69,
    /// `MPI_CXX_FLOAT_COMPLEX`
    CxxFloatComplex = 70,
    /// `MPI_CXX_DOUBLE_COMPLEX`
    CxxDoubleComplex = 71,
    /// `MPI_CXX_LONG_DOUBLE_COMPLEX`
    CxxLongDoubleComplex = 72,
}

impl BasicType {
    /// Every variant, in code order.
    pub const ALL: &'static [BasicType] = &[
        BasicType::Bool,
        BasicType::I8,
        BasicType::U8,
        BasicType::I16,
        BasicType::U16,
        BasicType::I32,
        BasicType::U32,
        BasicType::I64,
        BasicType::U64,
        BasicType::F32,
        BasicType::F64,
        BasicType::ComplexF32,
        BasicType::ComplexF64,
        BasicType::Char,
        BasicType::SignedChar,
        BasicType::UnsignedChar,
        BasicType::Byte,
        BasicType::WChar,
        BasicType::Short,
        BasicType::UnsignedShort,
        BasicType::Int,
        BasicType::Unsigned,
        BasicType::Long,
        BasicType::UnsignedLong,
        BasicType::LongLong,
        BasicType::UnsignedLongLong,
        BasicType::LongDouble,
        BasicType::ComplexLongDouble,
        BasicType::Aint,
        BasicType::Offset,
        BasicType::Count,
        BasicType::Packed,
        BasicType::CxxBool,
        BasicType::FInteger,
        BasicType::FReal,
        BasicType::FDoublePrecision,
        BasicType::FLogical,
        BasicType::FCharacter,
        BasicType::FComplex,
        BasicType::FDoubleComplex,
        BasicType::FInteger1,
        BasicType::FInteger2,
        BasicType::FInteger4,
        BasicType::FInteger8,
        BasicType::FInteger16,
        BasicType::FReal2,
        BasicType::FReal4,
        BasicType::FReal8,
        BasicType::FReal16,
        BasicType::FComplex4,
        BasicType::FComplex8,
        BasicType::FComplex16,
        BasicType::FComplex32,
        BasicType::CxxFloatComplex,
        BasicType::CxxDoubleComplex,
        BasicType::CxxLongDoubleComplex,
    ];

    /// Stable wire code (used in signature hashes).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Inverse of [`BasicType::code`].
    pub fn from_code(code: u8) -> Option<BasicType> {
        Self::ALL.iter().copied().find(|b| b.code() == code)
    }

    /// Short human-readable name (Rust-ish for the Rust primitives).
    pub fn name(self) -> &'static str {
        use BasicType::*;
        match self {
            Bool => "bool",
            I8 => "i8",
            U8 => "u8",
            I16 => "i16",
            U16 => "u16",
            I32 => "i32",
            U32 => "u32",
            I64 => "i64",
            U64 => "u64",
            F32 => "f32",
            F64 => "f64",
            ComplexF32 => "complex<f32>",
            ComplexF64 => "complex<f64>",
            Char => "MPI_CHAR",
            SignedChar => "MPI_SIGNED_CHAR",
            UnsignedChar => "MPI_UNSIGNED_CHAR",
            Byte => "MPI_BYTE",
            WChar => "MPI_WCHAR",
            Short => "MPI_SHORT",
            UnsignedShort => "MPI_UNSIGNED_SHORT",
            Int => "MPI_INT",
            Unsigned => "MPI_UNSIGNED",
            Long => "MPI_LONG",
            UnsignedLong => "MPI_UNSIGNED_LONG",
            LongLong => "MPI_LONG_LONG",
            UnsignedLongLong => "MPI_UNSIGNED_LONG_LONG",
            LongDouble => "MPI_LONG_DOUBLE",
            ComplexLongDouble => "MPI_C_LONG_DOUBLE_COMPLEX",
            Aint => "MPI_AINT",
            Offset => "MPI_OFFSET",
            Count => "MPI_COUNT",
            Packed => "MPI_PACKED",
            CxxBool => "MPI_CXX_BOOL",
            FInteger => "MPI_INTEGER",
            FReal => "MPI_REAL",
            FDoublePrecision => "MPI_DOUBLE_PRECISION",
            FLogical => "MPI_LOGICAL",
            FCharacter => "MPI_CHARACTER",
            FComplex => "MPI_COMPLEX",
            FDoubleComplex => "MPI_DOUBLE_COMPLEX",
            FInteger1 => "MPI_INTEGER1",
            FInteger2 => "MPI_INTEGER2",
            FInteger4 => "MPI_INTEGER4",
            FInteger8 => "MPI_INTEGER8",
            FInteger16 => "MPI_INTEGER16",
            FReal2 => "MPI_REAL2",
            FReal4 => "MPI_REAL4",
            FReal8 => "MPI_REAL8",
            FReal16 => "MPI_REAL16",
            FComplex4 => "MPI_COMPLEX4",
            FComplex8 => "MPI_COMPLEX8",
            FComplex16 => "MPI_COMPLEX16",
            FComplex32 => "MPI_COMPLEX32",
            CxxFloatComplex => "MPI_CXX_FLOAT_COMPLEX",
            CxxDoubleComplex => "MPI_CXX_DOUBLE_COMPLEX",
            CxxLongDoubleComplex => "MPI_CXX_LONG_DOUBLE_COMPLEX",
        }
    }

    /// Size of the byte-swapping unit of this type, `size` bytes wide on
    /// this host (complex numbers swap each component separately; bytes
    /// and packed data are not swapped). `None` for a representation this
    /// layer cannot put on the wire itself: `long double` off x86, whose
    /// format (binary128, double-double, ...) the wire does not name.
    pub fn swap_unit(self, size: usize) -> Option<usize> {
        use BasicType::*;
        // x86's long double is the x87 80-bit format (in 12 or 16 bytes)
        // with every implementation; its size on the wire tells which.
        const X87: bool = cfg!(any(target_arch = "x86_64", target_arch = "x86"));
        match self {
            LongDouble if !X87 => None,
            ComplexLongDouble | CxxLongDoubleComplex if !X87 => None,
            Packed | Byte => Some(1),
            ComplexF32 | ComplexF64 | ComplexLongDouble | FComplex | FDoubleComplex | FComplex4
            | FComplex8 | FComplex16 | FComplex32 | CxxFloatComplex | CxxDoubleComplex
            | CxxLongDoubleComplex => Some(size / 2),
            _ => Some(size),
        }
    }
}

impl fmt::Display for BasicType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Map a predefined datatype *name* (as returned by `MPI_Type_get_name`,
/// which the standard fixes to the handle's name) to its basic-type sequence.
/// Pair types (`MPI_FLOAT_INT`, …) expand to two basic types.
pub(crate) fn basics_for_name(name: &str) -> Option<&'static [BasicType]> {
    use BasicType::*;
    Some(match name {
        "MPI_C_BOOL" => &[Bool],
        "MPI_INT8_T" => &[I8],
        "MPI_UINT8_T" => &[U8],
        "MPI_INT16_T" => &[I16],
        "MPI_UINT16_T" => &[U16],
        "MPI_INT32_T" => &[I32],
        "MPI_UINT32_T" => &[U32],
        "MPI_INT64_T" => &[I64],
        "MPI_UINT64_T" => &[U64],
        "MPI_FLOAT" => &[F32],
        "MPI_DOUBLE" => &[F64],
        "MPI_C_FLOAT_COMPLEX" | "MPI_C_COMPLEX" => &[ComplexF32],
        "MPI_C_DOUBLE_COMPLEX" => &[ComplexF64],
        "MPI_CHAR" => &[Char],
        "MPI_SIGNED_CHAR" => &[SignedChar],
        "MPI_UNSIGNED_CHAR" => &[UnsignedChar],
        "MPI_BYTE" => &[Byte],
        "MPI_WCHAR" => &[WChar],
        "MPI_SHORT" => &[Short],
        "MPI_UNSIGNED_SHORT" => &[UnsignedShort],
        "MPI_INT" => &[Int],
        "MPI_UNSIGNED" => &[Unsigned],
        "MPI_LONG" => &[Long],
        "MPI_UNSIGNED_LONG" => &[UnsignedLong],
        "MPI_LONG_LONG_INT" | "MPI_LONG_LONG" => &[LongLong],
        "MPI_UNSIGNED_LONG_LONG" => &[UnsignedLongLong],
        "MPI_LONG_DOUBLE" => &[LongDouble],
        "MPI_C_LONG_DOUBLE_COMPLEX" => &[ComplexLongDouble],
        "MPI_AINT" => &[Aint],
        "MPI_OFFSET" => &[Offset],
        "MPI_COUNT" => &[Count],
        "MPI_PACKED" => &[Packed],
        "MPI_CXX_BOOL" => &[CxxBool],
        "MPI_INTEGER" => &[FInteger],
        "MPI_REAL" => &[FReal],
        "MPI_DOUBLE_PRECISION" => &[FDoublePrecision],
        "MPI_LOGICAL" => &[FLogical],
        "MPI_CHARACTER" => &[FCharacter],
        "MPI_COMPLEX" => &[FComplex],
        "MPI_DOUBLE_COMPLEX" => &[FDoubleComplex],
        "MPI_INTEGER1" => &[FInteger1],
        "MPI_INTEGER2" => &[FInteger2],
        "MPI_INTEGER4" => &[FInteger4],
        "MPI_INTEGER8" => &[FInteger8],
        "MPI_INTEGER16" => &[FInteger16],
        "MPI_REAL2" => &[FReal2],
        "MPI_REAL4" => &[FReal4],
        "MPI_REAL8" => &[FReal8],
        "MPI_REAL16" => &[FReal16],
        "MPI_COMPLEX4" => &[FComplex4],
        "MPI_COMPLEX8" => &[FComplex8],
        "MPI_COMPLEX16" => &[FComplex16],
        "MPI_COMPLEX32" => &[FComplex32],
        "MPI_CXX_FLOAT_COMPLEX" => &[CxxFloatComplex],
        "MPI_CXX_DOUBLE_COMPLEX" => &[CxxDoubleComplex],
        "MPI_CXX_LONG_DOUBLE_COMPLEX" => &[CxxLongDoubleComplex],
        "MPI_2INTEGER" => &[FInteger, FInteger],
        "MPI_2REAL" => &[FReal, FReal],
        "MPI_2DOUBLE_PRECISION" => &[FDoublePrecision, FDoublePrecision],
        // pair types used by MINLOC/MAXLOC
        "MPI_FLOAT_INT" => &[F32, Int],
        "MPI_DOUBLE_INT" => &[F64, Int],
        "MPI_LONG_INT" => &[Long, Int],
        "MPI_2INT" => &[Int, Int],
        "MPI_SHORT_INT" => &[Short, Int],
        "MPI_LONG_DOUBLE_INT" => &[LongDouble, Int],
        _ => return None,
    })
}

/// The handles rsmpi exposes (`RSMPI_*`); compared first, by value, so a
/// user renaming a predefined type cannot fool us for the common types.
fn known_handles() -> [(ffi::MPI_Datatype, BasicType); 13] {
    // SAFETY: reading rsmpi's predefined handle statics, which MPI initialises before any datatype is used.
    unsafe {
        [
            (ffi::RSMPI_C_BOOL, BasicType::Bool),
            (ffi::RSMPI_INT8_T, BasicType::I8),
            (ffi::RSMPI_UINT8_T, BasicType::U8),
            (ffi::RSMPI_INT16_T, BasicType::I16),
            (ffi::RSMPI_UINT16_T, BasicType::U16),
            (ffi::RSMPI_INT32_T, BasicType::I32),
            (ffi::RSMPI_UINT32_T, BasicType::U32),
            (ffi::RSMPI_INT64_T, BasicType::I64),
            (ffi::RSMPI_UINT64_T, BasicType::U64),
            (ffi::RSMPI_FLOAT, BasicType::F32),
            (ffi::RSMPI_DOUBLE, BasicType::F64),
            (ffi::RSMPI_FLOAT_COMPLEX, BasicType::ComplexF32),
            (ffi::RSMPI_DOUBLE_COMPLEX, BasicType::ComplexF64),
        ]
    }
}

/// `MPI_Type_get_name` of a datatype.
pub(crate) fn type_name(dt: ffi::MPI_Datatype) -> Result<String> {
    // MPI_MAX_OBJECT_NAME is 64 (Open MPI) / 128 (MPICH); 256 covers both.
    let mut buf = [0 as c_char; 256];
    let mut len: c_int = 0;
    // SAFETY: `buf` is a live buffer larger than MPI_MAX_OBJECT_NAME in both implementations; `len` is a live out-parameter.
    mpi_call("MPI_Type_get_name", unsafe {
        ffi::MPI_Type_get_name(dt, buf.as_mut_ptr(), &mut len)
    })?;
    // SAFETY: MPI_Type_get_name wrote a NUL-terminated string into `buf` (zeroed beforehand).
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// Identify a predefined (`MPI_COMBINER_NAMED`) datatype.
pub(crate) fn basics_of_named(dt: ffi::MPI_Datatype) -> Result<Vec<BasicType>> {
    for (h, b) in known_handles() {
        if h == dt {
            return Ok(vec![b]);
        }
    }
    let name = type_name(dt)?;
    basics_for_name(&name)
        .map(|s| s.to_vec())
        .ok_or_else(|| DatatypeError::Unsupported(format!("unknown predefined datatype {name:?}")))
}
