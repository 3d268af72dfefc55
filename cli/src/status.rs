//! Exit statuses (see `zklock --help`) and the one error type of the command line.

/// Bad usage: unknown option, bad lock path or duration, missing `--` before the command.
pub const USAGE: i32 = 64;
/// A malformed critical-section log (check-log).
pub const DATA: i32 = 65;
/// No ZooKeeper reachable, or none configured.
pub const UNAVAILABLE: i32 = 69;
/// Anything else that went wrong inside zklock or ZooKeeper (server error, expired session).
pub const SOFTWARE: i32 = 70;
/// The lock is held: `--try` found it busy, or `--timeout` passed while waiting.
pub const BUSY: i32 = 75;
/// The lock was lost while the command ran; the command was stopped.
pub const LOST: i32 = 76;
/// ZooKeeper's ACL refused the operation.
pub const PERMISSION: i32 = 77;
/// `elect`: the election path holds a node of another layout (the core's `Conflict`): a latch
/// beside selector nodes, Curator's beside kazoo's; neither would see the other, so zklock
/// refuses to lead. The message names the foreign node.
pub const CONFLICT: i32 = 78;
/// The command could not be executed (found but not runnable).
pub const CANNOT_EXECUTE: i32 = 126;
/// The command was not found.
pub const NOT_FOUND: i32 = 127;
/// `zklock server status`: no local server runs (Linux only, server.rs).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub const NOT_RUNNING: i32 = 3;
/// `zklock revoke` and `zklock break`: nobody holds the path, or the named node is gone.
pub const NOBODY: i32 = 3;
/// `ls -r`: the PATH does not exist (a typo is not "0 holders").
pub const NO_SUCH_PATH: i32 = 2;
/// `ls -r --held-over`: no holder was held that long (grep's 1: nothing matched).
pub const NONE_HELD_OVER: i32 = 1;
/// A mutual-exclusion violation found by check-log.
pub const VIOLATION: i32 = 1;
/// `check`: the token is not a current holder's or leader's.
pub const NOT_CURRENT: i32 = 1;

pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  exec and elect pass the command's own status through (128+N when a signal N killed it).
  Their own statuses, and those of the other commands:
    0    success
    64   usage: bad option or argument, invalid lock path, missing `--` before the command
    69   no ZooKeeper reachable within --connect-timeout, or no servers configured
    70   another ZooKeeper or internal error
    75   lock busy: --try found it held, or --timeout passed while waiting (elect: another
         leader past --timeout; --timeout 0 is one attempt)
    76   lock or leadership lost while the command ran (session expired, node deleted,
         --max-hold reached): the command got SIGTERM, then SIGKILL after --kill-after
    77   ZooKeeper's ACL refused the operation
    78   elect: a node of another election layout is on the path (named in the message);
         zklock refuses to lead beside it
    126  the command could not be executed
    127  the command was not found
    130  (143, 129) SIGINT (SIGTERM, SIGHUP) while waiting for the lock; no node is left behind
  server status: 0 running, 3 not running. revoke, break: 3 nobody holds the path (or NODE is
  gone, or --token/--if-older-than matched no holder). break: 64 without NODE, or --holder
  without --token or --if-older-than (the holders are shown, each with the command that breaks
  it), or a Curator/kazoo holder without --force.
  check: 0 the token is a current holder's or leader's, 1 it is not.
  ls -r: 2 no such PATH. ls -r --held-over: 0 some holder was held that long, 1 none was.

Environment:
  ZKLOCK_SERVERS     default for --servers
  ZKLOCK_SERVER_DIR  where `zklock server` keeps its data, log and state
  exec sets ZKLOCK_TOKEN (fencing token), ZKLOCK_PATH (lock path) and ZKLOCK_NODE (our node)
  for the command; elect sets those and ZKLOCK_LEADER=1 and ZKLOCK_LEADER_ID (our id).

Examples:
  zklock server start
  zklock exec /locks/nightly -- ./job.sh
  zklock exec -n 4 /locks/encoders -- ./encode.sh
  zklock revoke /locks/nightly
  zklock break --holder --token 4294967301 --reason \"job hung since 02:00\" /locks/nightly
  zklock elect --id \"$(hostname)\" --requeue /elections/scheduler -- ./scheduler
  zklock elect --listen /elections/scheduler
  zklock check /locks/nightly \"$ZKLOCK_TOKEN\"
  zklock --servers zk1:2181,zk2:2181 exec --try /locks/nightly -- ./job.sh
  zklock ls --json /locks/nightly";

/// Why a command failed: one line for stderr and the exit status.
#[derive(Debug)]
pub struct Failure {
    pub status: i32,
    pub message: String,
}

impl Failure {
    pub fn new(status: i32, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn software(message: impl Into<String>) -> Failure {
        Failure::new(SOFTWARE, message)
    }
}

impl From<zklock::Error> for Failure {
    fn from(e: zklock::Error) -> Failure {
        use zklock::ErrorKind as K;
        let status = match e.kind() {
            K::InvalidArgument => USAGE,
            K::Connection => UNAVAILABLE,
            K::Timeout => BUSY,
            K::Permission => PERMISSION,
            K::Conflict => CONFLICT,
            _ => SOFTWARE,
        };
        let e = cli_spelling(e);
        Failure::new(status, one_line(e.message()))
    }
}

/// The core names options as Rust, Python and C spell them (`tls_ca`); a user of this command
/// wrote `--tls-ca`, so its messages say that (issue 33). The core decides which words are
/// option names ([`zklock::OPTION_NAMES`]); this only says how the command line spells each.
fn cli_spelling(e: zklock::Error) -> zklock::Error {
    e.respell_options(|name| {
        match name {
            // The command line turns hostname checks off rather than on.
            "tls_verify_hostname" => "--no-tls-verify-hostname",
            // A password never goes on a command line (ps shows it); the core's message says
            // where the command line reads it from.
            "sasl_password" => "a password",
            "timeout_ms" => "--timeout",
            _ => return format!("--{}", name.replace('_', "-")),
        }
        .to_owned()
    })
}

/// A message on one line: runs of whitespace (newlines included) become one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
