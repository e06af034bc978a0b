//! The C refusals: `MPI_X` of every `refused` call returns Isthmus's error
//! on an Isthmus communicator and calls `PMPI_X` on any other.

use std::fmt::Write as _;

use crate::table::Prototype;

/// The refusal of `p`, word for word (see build.rs).
pub fn c_refusal(out: &mut String, p: &Prototype) {
    let Some(&first) = p.comms.first() else {
        // Only an output communicator: nothing to refuse.
        return;
    };
    let name = &p.name;
    let n = p.params.len();
    let words: Vec<String> = (0..n).map(|i| format!("a{i}: usize")).collect();
    let args: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    let check = p
        .comms
        .iter()
        .map(|i| format!("is_bridge_word(a{i})"))
        .collect::<Vec<_>>()
        .join(" || ");
    // Output file handles: set to MPI_FILE_NULL on refusal, because a
    // caller may convert it (MPICH's Fortran calls MPI_File_c2f, which
    // follows the pointer).
    let nulls: String = p
        .params
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| t == "MPI_File*")
        .map(|(i, _)| format!("null_file_word(a{i}); "))
        .collect();
    let (words, args) = (words.join(", "), args.join(", "));
    let _ = writeln!(
        out,
        "unsafe extern \"C\" {{\n    #[link_name = \"P{name}\"]\n    fn p_{name}({words}) -> c_int;\n}}\n\
         /// Refused on an Isthmus communicator (mpi-functions.txt).\n///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\npub unsafe extern \"C\" fn {name}({words}) -> c_int {{\n    \
         if {check} {{\n        {nulls}return refuse_word(a{first}, \"{name}\");\n    }}\n    \
         // SAFETY: the caller's arguments, word for word (see build.rs).\n    \
         unsafe {{ p_{name}({args}) }}\n}}\n"
    );
}
