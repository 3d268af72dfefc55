//! Issue 33: the command line's TLS and SASL errors named the options as Python spells them
//! (`tls_ca`) instead of the flags its user typed (`--tls-ca`). Refused before any I/O.

mod common;

use common::*;

fn refused(args: &[&str]) -> String {
    let mut cmd = zklock();
    cmd.args(["--servers", "127.0.0.1:2"])
        .args(args)
        .args(["ls", "/a"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_tls_ca_that_cannot_be_read_is_named_as_the_flag_tls_ca() {
    let err = refused(&["--tls-ca", "/nonexistent/ca.pem"]);
    assert!(err.contains("--tls-ca"), "{err}");
    assert!(!err.contains("tls_ca"), "{err}");
}

#[test]
fn a_client_certificate_without_a_ca_names_the_flags() {
    let err = refused(&["--tls-cert", "/nonexistent/c.pem"]);
    assert!(
        err.contains("--tls-cert") && err.contains("need --tls-ca"),
        "{err}"
    );
    assert!(!err.contains("tls_"), "{err}");
}

#[test]
fn a_sasl_user_without_a_password_names_the_flag_and_where_the_password_comes_from() {
    let err = refused(&["--sasl-user", "bob"]);
    assert!(err.contains("--sasl-user needs a password"), "{err}");
    assert!(err.contains("ZKLOCK_SASL_PASSWORD"), "{err}");
    assert!(!err.contains("sasl_"), "{err}");
}
