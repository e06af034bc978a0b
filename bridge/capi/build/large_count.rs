//! The large-count shells (`MPI_Send_c`, …, MPI 4; MPICH 4 has them, Open
//! MPI 4.1 does not): on an Isthmus communicator (or a message Isthmus
//! probed) the count goes to the body of the ordinary form as an `int`;
//! elsewhere the call goes to `PMPI_*_c`.

use std::fmt::Write as _;

use crate::table::Prototype;

/// The Rust type of a C parameter type of the point-to-point calls.
fn rust_type(name: &str, c: &str) -> &'static str {
    match c {
        "const void*" => "*const c_void",
        "void*" => "*mut c_void",
        "int" => "c_int",
        "MPI_Count" => "ffi::MPI_Count",
        "MPI_Datatype" => "MPI_Datatype",
        "MPI_Comm" => "MPI_Comm",
        "MPI_Request*" => "*mut MPI_Request",
        "MPI_Status*" => "*mut MPI_Status",
        "MPI_Message*" => "*mut ffi::MPI_Message",
        other => panic!("{name}: no Rust type for the C type {other:?} (build/large_count.rs)"),
    }
}

/// The shell of `p` (`MPI_X_c`), calling `crate::<body>::<small>`.
pub fn shell(out: &mut String, p: &Prototype, body: &str, small: &str) {
    let name = &p.name;
    let params: Vec<String> = p
        .params
        .iter()
        .map(|(t, n)| format!("{n}: {}", rust_type(name, t)))
        .collect();
    let args: Vec<&str> = p.params.iter().map(|(_, n)| n.as_str()).collect();
    let (params, args) = (params.join(", "), args.join(", "));
    let counts: Vec<&str> = p
        .params
        .iter()
        .filter(|(t, _)| t == "MPI_Count")
        .map(|(_, n)| n.as_str())
        .collect();
    let (ours, convert) = if let Some(&c) = p.comms.first() {
        let comm = &p.params[c].1;
        let convert: String = counts
            .iter()
            .map(|n| {
                format!(
                    "    let {n} = match small({n}, {comm}, \"{name}\") {{\n        \
                     Ok(n) => n,\n        Err(code) => return code,\n    }};\n"
                )
            })
            .collect();
        (format!("bridge_comm({comm}).is_none()"), convert)
    } else if p
        .params
        .iter()
        .any(|(t, n)| t == "MPI_Message*" && n == "message")
    {
        // The count was checked against int when the message was probed on
        // a bridge communicator; a larger one cannot be received whole anyway.
        let convert: String = counts
            .iter()
            .map(|n| format!("    let {n} = c_int::try_from({n}).unwrap_or(c_int::MAX);\n"))
            .collect();
        (
            format!(
                "message.is_null() || {{\n        \
                 // SAFETY: the program's message handle.\n        \
                 !crate::{body}::is_taken(unsafe {{ *message }})\n    }}"
            ),
            convert,
        )
    } else {
        panic!("{name}: a large-count bridge call needs a communicator or a message");
    };
    let _ = writeln!(
        out,
        "/// `{name}`: `{small}` with a count that fits an `int` on an Isthmus\n\
         /// communicator, `P{name}` elsewhere (generated from mpi-functions.txt).\n\
         ///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\n#[allow(clippy::too_many_arguments)] // MPI's own\n\
         pub unsafe extern \"C\" fn {name}({params}) -> c_int {{\n    \
         if {ours} {{\n        \
         // SAFETY: the program's arguments, passed on.\n        \
         return unsafe {{ ffi::P{name}({args}) }};\n    }}\n\
         {convert}    \
         // SAFETY: the program's arguments, the counts as ints.\n    \
         unsafe {{ crate::{body}::{small}({args}) }}\n}}\n"
    );
}
