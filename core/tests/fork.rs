//! The fork check keeps holding after it stopped asking the kernel for the pid on every call
//! (issue 17: getpid was most of a re-entrant acquire's cost): a child forked after the lock
//! was taken must not count up its parent's hold.

mod common;

use common::*;

#[tokio::test]
async fn a_child_forked_while_its_parent_holds_a_lock_cannot_reenter_it() {
    let client = client().await;
    let path = unique_path("fork");
    let lock = client.mutex(&path).unwrap();
    let lease = lock.acquire().await.unwrap();
    // Re-entered in the parent first, so that the pid is cached before the fork.
    let again = lock.reenter().expect("the parent re-enters its own lock");
    again.release().await.unwrap();
    // SAFETY: the child only reads the lock value (no runtime, no lock another thread may hold
    // at the fork) and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = match lock.reenter() {
            Some(lease) => {
                lease.detach();
                1 // the child counted up a hold that is its parent's
            }
            None => 0,
        };
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "a forked child re-entered its parent's lock"
    );
    assert_eq!(lock.hold_count(), 1, "the parent still holds it once");
    lease.release().await.unwrap();
    assert_empty_eventually(&path).await;
}
