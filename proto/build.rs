//! Generates the tonic/prost code from `proto/*.proto` with the system `protoc`
//! (Debian's protobuf-compiler, installed by scripts/install-deps.sh).
//!
//! The crate's `client` and `server` features decide which gRPC stubs are
//! generated, so that a client (the bridge, linked into every MPI program)
//! carries no server code and no server dependencies.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let client = std::env::var_os("CARGO_FEATURE_CLIENT").is_some();
    let server = std::env::var_os("CARGO_FEATURE_SERVER").is_some();
    tonic_prost_build::configure()
        .build_client(client)
        .build_transport(client)
        .build_server(server)
        // Malformed messages are INVALID_ARGUMENT, not INTERNAL (src/codec.rs).
        .codec_path("crate::codec::StrictCodec")
        .compile_protos(&["proto/isthmus.proto"], &["proto"])?;
    Ok(())
}
