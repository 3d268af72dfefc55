//! A C or C++ host keeps SIGPIPE's default action (terminate), unlike Rust programs, Python and
//! Node. zklock's socket writes all happen on its runtime thread, where SIGPIPE is blocked, so a
//! write to a connection the server has reset fails with EPIPE instead of killing the host.
//! Its own test binary: it restores SIGPIPE's default for the whole process, as a C host has it.

use std::io::{ErrorKind, IoSlice, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[test]
fn a_write_to_a_reset_connection_on_the_runtime_thread_fails_with_epipe_instead_of_killing_the_process(
) {
    // SAFETY: sets the process's SIGPIPE disposition back to the default, as a C program has it.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let outcome = zklock::support::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        let mut ours = TcpStream::connect(listener.local_addr().unwrap()).expect("a connection");
        drop(listener.accept().expect("the server side"));
        // The first write after the peer closed is answered by a reset; a later one fails. The
        // vectored form is writev(2), which (unlike std's send with MSG_NOSIGNAL) raises
        // SIGPIPE: the call the transport makes when it flushes several requests at once.
        let mut last = Ok(0);
        for _ in 0..100 {
            last = ours.write_vectored(&[IoSlice::new(b"ping"), IoSlice::new(b"pong")]);
            if last.is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(last.map(|_| ()).map_err(|e| e.kind()))
    })
    .expect("the runtime ran the write");
    assert_eq!(
        outcome,
        Err(ErrorKind::BrokenPipe),
        "the write on the runtime thread should fail with EPIPE (and the process live on)"
    );
}
