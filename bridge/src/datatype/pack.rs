//! Packing through MPI: native `MPI_Pack`/`MPI_Unpack` in chunks that fit
//! MPI's `int` sizes, and `MPI_Pack_external`/`MPI_Unpack_external` for the
//! types whose native and external32 sizes differ.

use std::ffi::{c_void, CStr};
use std::os::raw::c_int;

use mpi::ffi;

use super::error::{mpi_call, DatatypeError, Result};
use crate::format::WireFormat;

fn to_count(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| DatatypeError::CountTooLarge(n))
}

const EXTERNAL32: &CStr = c"external32";

pub(crate) fn external32_size(dt: ffi::MPI_Datatype, count: usize) -> Result<usize> {
    let mut size: ffi::MPI_Aint = 0;
    // SAFETY: the datatype handle is valid and `size` is a live out-parameter.
    mpi_call("MPI_Pack_external_size", unsafe {
        ffi::MPI_Pack_external_size(EXTERNAL32.as_ptr(), to_count(count)?, dt, &mut size)
    })?;
    usize::try_from(size).map_err(|_| DatatypeError::Overflow)
}

/// `count` elements of `dt` at `MPI_BOTTOM` (a null buffer: `dt` holds
/// absolute addresses), as one element of a type displaced by minus a real
/// address, given with that address: MPICH's `MPI_Pack`/`MPI_Unpack` refuse
/// a null buffer, which MPI allows.
struct AtBottom {
    ty: ffi::MPI_Datatype,
}

/// The address the [`AtBottom`] type is given with.
static BOTTOM_ANCHOR: u8 = 0;

impl AtBottom {
    fn new(dt: ffi::MPI_Datatype, count: usize) -> Result<Self> {
        let blocks = to_count(count)?;
        let anchor = std::ptr::addr_of!(BOTTOM_ANCHOR) as usize;
        let disp = -(ffi::MPI_Aint::try_from(anchor).map_err(|_| DatatypeError::Overflow)?);
        let mut ty = dt;
        // SAFETY: one block of `blocks` elements of the live type `dt`; `ty`
        // an out-handle, committed before use and freed on drop.
        mpi_call("MPI_Type_create_struct", unsafe {
            ffi::MPI_Type_create_struct(1, &blocks, &disp, &dt, &mut ty)
        })?;
        // Freed on drop, committed or not.
        let mut made = Self { ty };
        // SAFETY: our new type.
        mpi_call("MPI_Type_commit", unsafe {
            ffi::MPI_Type_commit(&mut made.ty)
        })?;
        Ok(made)
    }

    /// The buffer to give with [`AtBottom::ty`]: the anchor's address.
    fn base() -> *mut c_void {
        std::ptr::addr_of!(BOTTOM_ANCHOR) as *mut c_void
    }
}

impl Drop for AtBottom {
    fn drop(&mut self) {
        // SAFETY: our type, freed once.
        unsafe { ffi::MPI_Type_free(&mut self.ty) };
    }
}

/// Largest element count per MPI_Pack/MPI_Unpack call (their sizes are `int`).
fn chunk_elems(elem_size: usize) -> usize {
    (c_int::MAX as usize / elem_size.max(1)).max(1)
}

/// `MPI_Pack` (native representation; for the implementations we support,
/// the data bytes in typemap order without gaps) of `count` elements.
pub(crate) unsafe fn native_pack(
    data_size_per_elem: usize,
    extent: usize,
    dt: ffi::MPI_Datatype,
    count: usize,
    ptr: *const c_void,
) -> Result<Vec<u8>> {
    if ptr.is_null() && count > 0 {
        let b = AtBottom::new(dt, count)?;
        let size = data_size_per_elem
            .checked_mul(count)
            .ok_or(DatatypeError::Overflow)?;
        // SAFETY: the caller's absolute addresses, described by `b.ty`
        // relative to the anchor.
        return unsafe { native_pack(size, size, b.ty, 1, AtBottom::base()) };
    }
    let total = data_size_per_elem
        .checked_mul(count)
        .ok_or(DatatypeError::Overflow)?;
    let mut out = vec![0u8; total];
    let per = chunk_elems(data_size_per_elem);
    let mut done = 0;
    let mut off = 0usize;
    while done < count {
        let n = per.min(count - done);
        let len = n * data_size_per_elem;
        let mut position: c_int = 0;
        let dst = out.get_mut(off..off + len).ok_or(DatatypeError::Overflow)?;
        // SAFETY: the caller guarantees `count` elements at `ptr` (stride `extent`); the output slice holds `len` bytes, the size MPI_Pack reports for `n` elements.
        mpi_call("MPI_Pack", unsafe {
            ffi::MPI_Pack(
                (ptr as *const u8).add(done * extent) as *const c_void,
                n as c_int,
                dt,
                dst.as_mut_ptr() as *mut c_void,
                len as c_int,
                &mut position,
                ffi::RSMPI_COMM_SELF,
            )
        })?;
        if position as usize != len {
            return Err(DatatypeError::Unsupported(format!(
                "MPI_Pack produced {position} bytes for {n} elements of {} data bytes each",
                data_size_per_elem
            )));
        }
        done += n;
        off += len;
    }
    Ok(out)
}

/// Inverse of [`native_pack`].
pub(crate) unsafe fn native_unpack(
    data_size_per_elem: usize,
    extent: usize,
    dt: ffi::MPI_Datatype,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<()> {
    if out.is_null() && count > 0 {
        let b = AtBottom::new(dt, count)?;
        let size = data_size_per_elem
            .checked_mul(count)
            .ok_or(DatatypeError::Overflow)?;
        // SAFETY: as for `native_pack`'s MPI_BOTTOM case.
        return unsafe { native_unpack(size, size, b.ty, bytes, 1, AtBottom::base()) };
    }
    let per = chunk_elems(data_size_per_elem);
    let mut done = 0;
    let mut off = 0usize;
    while done < count {
        let n = per.min(count - done);
        let len = n * data_size_per_elem;
        let mut position: c_int = 0;
        let src = bytes.get(off..off + len).ok_or(DatatypeError::Overflow)?;
        // SAFETY: `src` is `len` bytes of `bytes` (checked by `get`); the caller guarantees writable room for `count` elements at `out` (stride `extent`).
        mpi_call("MPI_Unpack", unsafe {
            ffi::MPI_Unpack(
                src.as_ptr() as *const c_void,
                len as c_int,
                &mut position,
                (out as *mut u8).add(done * extent) as *mut c_void,
                n as c_int,
                dt,
                ffi::RSMPI_COMM_SELF,
            )
        })?;
        if position as usize != len {
            return Err(DatatypeError::Unsupported(format!(
                "MPI_Unpack consumed {position} bytes for {n} elements of {} data bytes each",
                data_size_per_elem
            )));
        }
        done += n;
        off += len;
    }
    Ok(())
}

/// `MPI_Pack_external("external32")` of `count` elements of `dt` at `ptr`.
///
/// # Safety
/// `ptr` must point to `count` valid elements of `dt`.
pub unsafe fn pack_external32(
    dt: ffi::MPI_Datatype,
    count: usize,
    ptr: *const c_void,
) -> Result<Vec<u8>> {
    if ptr.is_null() && count > 0 {
        let b = AtBottom::new(dt, count)?;
        // SAFETY: as for `native_pack`'s MPI_BOTTOM case.
        return unsafe { pack_external32(b.ty, 1, AtBottom::base()) };
    }
    let size = external32_size(dt, count)?;
    let mut out = vec![0u8; size];
    let mut position: ffi::MPI_Aint = 0;
    if count > 0 {
        // SAFETY: the caller guarantees `count` valid elements at `ptr`; `out` holds the `size` bytes MPI_Pack_external_size asked for.
        mpi_call("MPI_Pack_external", unsafe {
            ffi::MPI_Pack_external(
                EXTERNAL32.as_ptr(),
                ptr,
                to_count(count)?,
                dt,
                out.as_mut_ptr() as *mut c_void,
                size as ffi::MPI_Aint,
                &mut position,
            )
        })?;
    }
    out.truncate(position as usize);
    Ok(out)
}

/// `MPI_Unpack_external("external32")` of `count` elements of `dt` into `out`.
///
/// # Safety
/// `out` must point to writable memory for `count` elements of `dt`.
pub unsafe fn unpack_external32(
    dt: ffi::MPI_Datatype,
    bytes: &[u8],
    count: usize,
    out: *mut c_void,
) -> Result<()> {
    let mut position: ffi::MPI_Aint = 0;
    if count == 0 {
        return Ok(());
    }
    if out.is_null() {
        let b = AtBottom::new(dt, count)?;
        // SAFETY: as for `native_pack`'s MPI_BOTTOM case.
        return unsafe { unpack_external32(b.ty, bytes, 1, AtBottom::base()) };
    }
    // SAFETY: input is a live slice of its stated length; the caller guarantees writable room for `count` elements at `out`.
    mpi_call("MPI_Unpack_external", unsafe {
        ffi::MPI_Unpack_external(
            EXTERNAL32.as_ptr(),
            bytes.as_ptr() as *const c_void,
            bytes.len() as ffi::MPI_Aint,
            &mut position,
            out,
            to_count(count)?,
            dt,
        )
    })?;
    if position as usize != bytes.len() {
        return Err(DatatypeError::LengthMismatch {
            actual: bytes.len(),
            expected: position as usize,
            count,
            format: WireFormat::External32,
        });
    }
    Ok(())
}
