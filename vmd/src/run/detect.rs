//! A component's MPI implementation read from its binary, for files that
//! leave `impl` out: the shared libraries an ELF program names
//! (`DT_NEEDED`): Open MPI's `libmpi.so.40`, MPICH's `libmpich.so.12` (or
//! its `libmpi.so.12` alias); neither: a plain program (`exec`).
//!
//! Only 64-bit little-endian ELF (what the taskers' hosts run); anything
//! else is an error asking for `impl` in the file. Every read is checked
//! against the file's length: a truncated or hostile file is an error,
//! never a panic.

use std::path::Path;

use super::spec::Impl;

/// Most bytes read from a program to find its libraries.
const MAX_BINARY: u64 = 1 << 30;

/// The implementation `program` was linked with.
pub fn implementation_of(program: &Path) -> Result<Impl, String> {
    let len = std::fs::metadata(program)
        .map_err(|e| format!("{}: {e}", program.display()))?
        .len();
    if len > MAX_BINARY {
        return Err(format!("{}: larger than 1 GiB", program.display()));
    }
    let bytes = std::fs::read(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let needed = needed_libraries(&bytes)
        .ok_or_else(|| format!("{} is not a 64-bit ELF program", program.display()))?;
    Ok(from_libraries(&needed))
}

/// Which implementation a list of needed libraries points to.
fn from_libraries(needed: &[String]) -> Impl {
    let mpich = needed
        .iter()
        .any(|l| l.starts_with("libmpich.so") || l.starts_with("libmpi.so.12"));
    let openmpi = needed.iter().any(|l| {
        l.starts_with("libmpi.so") || l.starts_with("libmpi_mpifh.so") || l.starts_with("libopen-")
    });
    match (mpich, openmpi) {
        (true, _) => Impl::Mpich,
        (false, true) => Impl::Openmpi,
        (false, false) => Impl::Exec,
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn usize_at(b: &[u8], at: usize) -> Option<usize> {
    usize::try_from(u64_at(b, at)?).ok()
}

/// The `DT_NEEDED` names of an ELF64 LE file, by its section headers: the
/// `SHT_DYNAMIC` section and the string table it links to. `None`: not
/// such a file (or a malformed one).
fn needed_libraries(b: &[u8]) -> Option<Vec<String>> {
    const SHT_DYNAMIC: u32 = 6;
    const DT_NULL: u64 = 0;
    const DT_NEEDED: u64 = 1;
    // Magic, ELFCLASS64, ELFDATA2LSB.
    if b.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = usize_at(b, 0x28)?;
    let shentsize = usize::from(u16_at(b, 0x3a)?);
    let shnum = usize::from(u16_at(b, 0x3c)?);
    if shentsize < 0x40 {
        return None;
    }
    let section = |i: usize| -> Option<(u32, u32, usize, usize)> {
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // sh_type, sh_link, sh_offset, sh_size
        Some((
            u32_at(b, at + 4)?,
            u32_at(b, at + 0x28)?,
            usize_at(b, at + 0x18)?,
            usize_at(b, at + 0x20)?,
        ))
    };
    let mut names = Vec::new();
    for i in 0..shnum {
        let (kind, link, offset, size) = section(i)?;
        if kind != SHT_DYNAMIC {
            continue;
        }
        let (_, _, str_offset, str_size) = section(usize::try_from(link).ok()?)?;
        let strings = b.get(str_offset..str_offset.checked_add(str_size)?)?;
        let dynamic = b.get(offset..offset.checked_add(size)?)?;
        for entry in dynamic.chunks_exact(16) {
            let tag = u64_at(entry, 0)?;
            if tag == DT_NULL {
                break;
            }
            if tag == DT_NEEDED {
                let name = strings.get(usize_at(entry, 8)?..)?;
                let end = name.iter().position(|&c| c == 0)?;
                names.push(String::from_utf8_lossy(name.get(..end)?).into_owned());
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_name_the_implementation() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            from_libraries(&l(&["libc.so.6", "libmpi.so.40"])),
            Impl::Openmpi
        );
        assert_eq!(
            from_libraries(&l(&["libmpich.so.12", "libc.so.6"])),
            Impl::Mpich
        );
        assert_eq!(from_libraries(&l(&["libmpi.so.12"])), Impl::Mpich);
        assert_eq!(from_libraries(&l(&["libc.so.6"])), Impl::Exec);
    }

    #[test]
    fn a_real_program_is_read() {
        // /bin/sh is a dynamically linked ELF program on every host here.
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let needed = needed_libraries(&std::fs::read(&sh).unwrap()).unwrap();
        assert!(
            needed.iter().any(|l| l.starts_with("libc.so")),
            "{needed:?}"
        );
        assert_eq!(implementation_of(&sh).unwrap(), Impl::Exec);
    }

    #[test]
    fn non_elf_and_truncated_files_are_errors_not_panics() {
        assert!(needed_libraries(b"#!/bin/sh\n").is_none());
        let sh = std::fs::read(std::fs::canonicalize("/bin/sh").unwrap()).unwrap();
        for cut in [6, 0x30, 0x40, sh.len() / 2] {
            let _ = needed_libraries(&sh[..cut]);
        }
    }
}
