//! Generates the tonic/prost code from `proto/*.proto` with the system `protoc`
//! (Debian's protobuf-compiler, installed by scripts/install-deps.sh).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    tonic_prost_build::configure().compile_protos(&["proto/isthmus.proto"], &["proto"])?;
    Ok(())
}
