//! `CipherWriter` and `CipherReader` over a real loopback `TcpStream`.
//!
//! The point: a read never waits for more than the first segment it works
//! on, so a socket peer that sends some
//! segments and then waits for a reply must get their plaintext. The writer
//! flushes its sealed segments and then waits (unfinished) until the reader
//! says it has them; a reader that asked the socket for more than it needs
//! would block until its read timeout and the test fails instead of
//! hanging. Every socket has read and write timeouts, every channel wait a
//! timeout, and every thread is joined.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use cipherio::{Algorithm, CipherReader, CipherWriter, Key};
use common::{Counted, Layout, data};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A connected pair: (client, accepted), both with read/write timeouts.
fn pair() -> (TcpStream, TcpStream) {
    common::tcp_pair(TIMEOUT)
}

const SEG: usize = 1024;
const K: usize = 3;

/// Writer: K*SEG + 1 bytes (K sealed segments and one byte held back),
/// `flush`, then wait for the reader unfinished; then the rest, `finish`.
/// Reader: must get the K segments' plaintext without the writer sending
/// more. With `wait_for_all`, the reader first waits until all K segments
/// sit in the socket's receive queue, so one inner read delivers them all.
fn flushed_segments_reach_a_waiting_peer(rcap: usize, bufsize: usize, wait_for_all: bool) {
    flushed_segments_reach_a_waiting_peer_on(rcap, bufsize, wait_for_all, 1);
}

/// [`flushed_segments_reach_a_waiting_peer`] with writer and reader on
/// `threads` threads: a flush sends what one thread sends (the segments
/// of the batch begun but the last), and the reader opens what arrived
/// without waiting for a batch.
fn flushed_segments_reach_a_waiting_peer_on(
    rcap: usize,
    bufsize: usize,
    wait_for_all: bool,
    threads: usize,
) {
    let key = Key::generate(Algorithm::Aes256Gcm);
    let plain = data(K * SEG + 1 + 5000, 7);
    let (client, server) = pair();
    let (flushed_tx, flushed_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();

    let writer = {
        let key = key.clone();
        let plain = plain.clone();
        thread::spawn(move || -> io::Result<()> {
            let mut w = CipherWriter::builder(&key)
                .capacity(SEG)
                .threads(threads)
                .threads_after(0)
                .build(client);
            w.write_all(&plain[..=K * SEG])?;
            w.flush()?;
            let _ = flushed_tx.send(());
            // Wait, unfinished, for the reader (or give up if it is gone).
            go_rx
                .recv_timeout(TIMEOUT * 2)
                .map_err(|e| io::Error::other(format!("reader never signalled: {e}")))?;
            w.write_all(&plain[K * SEG + 1..])?;
            let s = w.finish()?;
            s.shutdown(Shutdown::Write)?;
            Ok(())
        })
    };

    let sealed_k = Layout::native(SEG).seg_start(K);
    let reader = || -> io::Result<(Vec<u8>, Vec<usize>, usize, usize)> {
        if wait_for_all {
            flushed_rx
                .recv_timeout(TIMEOUT)
                .map_err(|e| io::Error::other(format!("writer never flushed: {e}")))?;
            // Until the K sealed segments are all queued on the socket.
            let mut peek = vec![0; 2 * sealed_k];
            let mut spins = 0;
            while server.peek(&mut peek)? < sealed_k {
                spins += 1;
                assert!(spins < 10_000_000, "segments never arrived");
                thread::yield_now();
            }
        }
        let inner = Counted::new(server.try_clone()?);
        let mut r = CipherReader::builder(&key)
            .capacity(rcap)
            .threads(threads)
            .threads_after(0)
            .build(inner);
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        let mut buf = vec![0; bufsize];
        while out.len() < K * SEG {
            // Times out (WouldBlock/TimedOut) if it waits for data the
            // writer has not sent.
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Err(io::Error::other("end of stream before the writer finished"));
            }
            out.extend_from_slice(&buf[..n]);
            sizes.push(n);
        }
        let reads_before_finish = r.get_ref().calls;
        let _ = go_tx.send(());
        r.read_to_end(&mut out)?;
        Ok((out, sizes, reads_before_finish, r.get_ref().calls))
    };
    let result = reader();
    drop(go_tx);
    let written = writer.join().unwrap();
    let (out, sizes, reads_before, reads) = result.expect("reader");
    written.expect("writer");
    println!(
        "tcp: {threads} threads, reader capacity {rcap}, {bufsize}-byte reads: read sizes before finish {sizes:?}, \
         {reads_before} socket reads before finish, {reads} in all"
    );
    // The held-back byte is not sealed before more data or finish: the
    // reader got exactly the K flushed segments before the signal.
    assert_eq!(sizes.iter().sum::<usize>(), K * SEG);
    assert_eq!(out, plain);
    if wait_for_all {
        // All K segments arrived in one socket read and were returned by
        // as few reads as the caller's buffer allows.
        assert_eq!(reads_before, 1);
        if bufsize >= K * SEG {
            assert_eq!(sizes, [K * SEG]);
        }
    }
}

#[test]
fn flushed_segments_reach_the_peer_default_reader() {
    flushed_segments_reach_a_waiting_peer(8192, 100, false);
    flushed_segments_reach_a_waiting_peer(8192, SEG, false);
    flushed_segments_reach_a_waiting_peer(8192, 64 * 1024, false);
}

#[test]
fn flushed_segments_reach_the_peer_small_reader() {
    flushed_segments_reach_a_waiting_peer(1, 100, false);
    flushed_segments_reach_a_waiting_peer(100, 64 * 1024, false);
}

#[test]
fn flushed_segments_reach_the_peer_large_reader_one_socket_read() {
    flushed_segments_reach_a_waiting_peer(64 * 1024, 64 * 1024, true);
    flushed_segments_reach_a_waiting_peer(64 * 1024, 100, true);
    flushed_segments_reach_a_waiting_peer(64 * 1024, SEG, true);
}

#[test]
fn flushed_segments_reach_the_peer_on_threads() {
    for threads in [2, 8] {
        flushed_segments_reach_a_waiting_peer_on(8192, 100, false, threads);
        flushed_segments_reach_a_waiting_peer_on(1, 64 * 1024, false, threads);
        flushed_segments_reach_a_waiting_peer_on(64 * 1024, 64 * 1024, true, threads);
        flushed_segments_reach_a_waiting_peer_on(64 * 1024, SEG, true, threads);
    }
}

/// Megabytes both ways at once through one connection, default capacities:
/// each end has a writer thread and a reader thread on clones of its socket.
#[test]
fn megabytes_both_ways_with_default_capacities() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let (client, server) = pair();
    let a_to_b = data(3 * 1024 * 1024 + 77, 1);
    let b_to_a = data(2 * 1024 * 1024 + 4099, 2);

    let send = |stream: TcpStream, plain: Vec<u8>| {
        let key = key.clone();
        thread::spawn(move || -> io::Result<()> {
            let mut w = CipherWriter::new(&key, stream);
            for chunk in plain.chunks(100_000) {
                w.write_all(chunk)?;
            }
            let s = w.finish()?;
            s.shutdown(Shutdown::Write)?;
            Ok(())
        })
    };
    let recv = |stream: TcpStream| {
        let key = key.clone();
        thread::spawn(move || -> io::Result<Vec<u8>> {
            let mut out = Vec::new();
            CipherReader::new(&key, stream).read_to_end(&mut out)?;
            Ok(out)
        })
    };
    let threads_send = [
        send(client.try_clone().unwrap(), a_to_b.clone()),
        send(server.try_clone().unwrap(), b_to_a.clone()),
    ];
    let threads_recv = [recv(server), recv(client)];
    let sent: Vec<io::Result<()>> = threads_send.map(|t| t.join().unwrap()).into();
    let [at_b, at_a] = threads_recv.map(|t| t.join().unwrap());
    for s in sent {
        s.expect("writer");
    }
    assert_eq!(at_b.expect("reader at b"), a_to_b);
    assert_eq!(at_a.expect("reader at a"), b_to_a);
}

/// Request/response over one connection, as the reader's docs describe: the
/// client finishes its request and shuts down its sending side (keeping the
/// socket open for the reply); the server reads the whole request to the
/// end, short final segment included, and answers on the same socket.
#[test]
fn request_then_reply_after_shutdown_write() {
    let key = Key::generate(Algorithm::ChaCha20Poly1305);
    let (client, server) = pair();
    let request = data(3 * SEG + 100, 3);
    let reply = data(2 * SEG + 7, 4);

    let expected_request = request.clone();
    let server_reply = reply.clone();
    let server_key = key.clone();
    let server = thread::spawn(move || {
        let mut r = CipherReader::new(&server_key, server.try_clone().unwrap());
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert!(got == expected_request, "request differs");
        let mut w = CipherWriter::with_capacity(SEG, &server_key, server);
        w.write_all(&server_reply).unwrap();
        w.finish().unwrap().shutdown(Shutdown::Write).unwrap();
    });

    let mut w = CipherWriter::with_capacity(SEG, &key, client.try_clone().unwrap());
    w.write_all(&request).unwrap();
    w.finish().unwrap().shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    CipherReader::new(&key, client)
        .read_to_end(&mut got)
        .unwrap();
    server.join().unwrap();
    assert!(got == reply, "reply differs");
}
