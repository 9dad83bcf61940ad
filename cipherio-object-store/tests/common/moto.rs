//! The moto server on loopback (S3, and KMS on the same port), for the
//! tests and the examples (which include this file by path): started once
//! per process from `s3-server.sh`, ended with the process; one bucket per
//! user.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};

/// The moto S3 server every test of one test binary shares (each test its
/// own bucket), started from `s3-server.sh`; it ends with the binary.
struct Server {
    port: u16,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

fn start() -> Result<Server, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/s3-server.sh");
    let mut child = Command::new("bash")
        .args([script, &port.to_string(), &std::process::id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {script}: {e}"))?;
    // Waits for the server to listen (the venv may be made first).
    for _ in 0..1200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(Server { port });
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{script} exited: {status}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    Err(format!("{script} did not listen on port {port}"))
}

/// A bare HTTP request to the moto server (it takes them unsigned): the
/// reply, status line first.
fn request(port: u16, method: &str, target: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    if reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200") {
        Ok(reply)
    } else {
        Err(std::io::Error::other(reply))
    }
}

fn create_bucket(port: u16, bucket: &str) -> std::io::Result<()> {
    request(port, "PUT", &format!("/{bucket}")).map(drop)
}

/// Multipart uploads begun and neither completed nor aborted in the bucket
/// of test `test`.
pub fn uploads_in_progress(test: &str) -> usize {
    let bucket = test.replace('_', "-");
    request(port().unwrap(), "GET", &format!("/{bucket}?uploads"))
        .unwrap()
        .matches("<Upload>")
        .count()
}

/// The server's port, started on first use.
pub fn port() -> Result<u16, String> {
    SERVER
        .get_or_init(start)
        .as_ref()
        .map(|s| s.port)
        .map_err(Clone::clone)
}

/// An S3 client for a fresh bucket `bucket`.
pub fn bucket(bucket: &str) -> Result<AmazonS3, String> {
    let port = port()?;
    create_bucket(port, bucket).map_err(|e| format!("cannot create bucket {bucket}: {e}"))?;
    Ok(s3_client(port, bucket))
}

/// The moto server's port for test `test`, or `None` (said loudly) when
/// the server cannot start. With `CIPHERIO_REQUIRE_S3` set (as CI sets
/// it), a server that cannot start fails the test instead.
pub fn server(test: &str) -> Option<u16> {
    port()
        .inspect_err(|why| {
            if std::env::var_os("CIPHERIO_REQUIRE_S3").is_some() {
                panic!("{test}: the S3 server (moto) did not start: {why}");
            }
            eprintln!("SKIPPED {test}: the S3 server (moto) did not start: {why}");
        })
        .ok()
}

/// An S3 client for a fresh bucket on the moto server, or `None` as
/// [`server`] says.
pub fn s3(test: &str) -> Option<Arc<AmazonS3>> {
    server(test)?;
    Some(Arc::new(bucket(&test.replace('_', "-")).unwrap()))
}

/// A KMS client of the moto server (which serves KMS on the S3 port), or
/// `None` as [`server`] says: static credentials, us-east-1, plain HTTP.
#[cfg(feature = "aws-kms")]
pub fn kms(test: &str) -> Option<aws_sdk_kms::Client> {
    use aws_sdk_kms::config::{BehaviorVersion, Credentials, Region};
    let port = server(test)?;
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .endpoint_url(format!("http://127.0.0.1:{port}"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    Some(aws_sdk_kms::Client::from_conf(config))
}

/// object_store's S3 client for `bucket` on loopback `port`.
pub fn s3_client(port: u16, bucket: &str) -> AmazonS3 {
    // The HTTP client asks rustls for the process's crypto provider (ring
    // here); an error means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    AmazonS3Builder::new()
        .with_endpoint(format!("http://127.0.0.1:{port}"))
        .with_allow_http(true)
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .with_virtual_hosted_style_request(false)
        .build()
        .unwrap()
}
