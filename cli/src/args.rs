//! The command line as clap parses it: the commands, their flags and the options before them,
//! the parsers of durations, timeouts and election styles, and the usage rule clap cannot say (an
//! option given before a command that does not use it). It decides nothing about a run: the
//! options in force are `settings`'.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::status::{self, one_line, Failure, EXIT_STATUS_HELP};

/// Where ZooKeeper is and how long to try reaching it (exec and ls).
#[derive(Args, Debug, Clone, Default)]
pub struct Connection {
    /// ZooKeeper connect string (host:port[,host:port...][/chroot]). Default: $ZKLOCK_SERVERS,
    /// else the local server that `zklock server start` runs. An empty value is an error.
    // The text is clap's help as well: `[/chroot]` stays as the user reads it, not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "HOSTS")]
    pub servers: Option<String>,

    /// How long to keep trying to reach a ZooKeeper server before giving up [default: 15s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub connect_timeout: Option<Duration>,

    #[command(flatten)]
    pub secure: Secure,
}

/// Secure ZooKeeper (exec and ls). The SASL password never comes from a flag (a flag shows in
/// `ps`): $ZKLOCK_SASL_PASSWORD, or the first line of --sasl-password-file.
#[derive(Args, Debug, Clone, Default)]
pub struct Secure {
    /// PEM file of the CA that signed the servers' certificates: TLS to every server. This and
    /// the next two also take PEM text itself (a value holding `-----BEGIN `), never shown.
    #[arg(
        long,
        value_name = "PEM",
        env = "ZKLOCK_TLS_CA",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub tls_ca: Option<String>,

    /// PEM file of a client certificate (with --tls-key), for servers that ask for one.
    #[arg(
        long,
        value_name = "PEM",
        env = "ZKLOCK_TLS_CERT",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub tls_cert: Option<String>,

    /// PEM file of the client certificate's private key.
    #[arg(
        long,
        value_name = "PEM",
        env = "ZKLOCK_TLS_KEY",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub tls_key: Option<String>,

    /// Do not check that a server's certificate names the host dialled (the CA is still
    /// checked). Also ZKLOCK_TLS_VERIFY_HOSTNAME=false.
    #[arg(long)]
    pub no_tls_verify_hostname: bool,

    /// SASL DIGEST-MD5 user; the password comes from $ZKLOCK_SASL_PASSWORD or
    /// --sasl-password-file.
    #[arg(long, value_name = "USER", env = "ZKLOCK_SASL_USER")]
    pub sasl_user: Option<String>,

    /// A file whose first line is the SASL password.
    #[arg(long, value_name = "FILE", env = "ZKLOCK_SASL_PASSWORD_FILE")]
    pub sasl_password_file: Option<String>,

    /// ACL of the lock nodes we create: open, creator-all or read-anyone-creator-all (the last
    /// two need a SASL user or $ZKLOCK_AUTH, digest credentials user:password).
    #[arg(long, value_name = "POLICY", env = "ZKLOCK_ACL")]
    pub acl: Option<String>,
}

/// The session that holds the lock, and how long to wait for it (exec).
#[derive(Args, Debug, Clone, Default)]
pub struct Holding {
    /// Session timeout asked of the server: how long a silent holder keeps the lock
    /// [default: 10s]. Durations take a unit: 500ms, 10s, 2m (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub session_timeout: Option<Duration>,

    /// The ensemble's tickTime: the lost signal's deadline depends on it (docs/safety.md).
    /// Learned from the servers at connect; this can raise it, never lower it. A session
    /// shorter than four ticks is refused.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub server_tick: Option<Duration>,

    /// How long to wait for the lock; default: forever. 0 is the same as --try. A bare number
    /// is seconds by zklock's one rule for every face: -1 and inf wait forever, other negative
    /// numbers and nan are refused.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout, allow_hyphen_values = true)]
    pub timeout: Option<Timeout>,

    /// Identity written into our lock node (shown by `zklock ls`). Default: host/pid.
    #[arg(long, value_name = "TEXT")]
    pub identity: Option<String>,
}

#[derive(Parser, Debug)]
#[command(
    name = "zklock",
    version,
    about = "Distributed locks and leader election on Apache ZooKeeper: run a command under a lock or while leader, list a lock's queue, check a fencing token, run a local ZooKeeper",
    after_help = EXIT_STATUS_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Options given before the command (`zklock --servers HOSTS exec ...`); they may also
    /// follow it. Each applies only to the commands that use it.
    #[command(flatten)]
    pub connection: Connection,

    #[command(flatten)]
    pub holding: Holding,

    #[command(subcommand)]
    pub command: Command,
}

/// A usage failure for an option given before a command that does not use it.
pub fn refuse_unused(cli: &Cli) -> Result<(), Failure> {
    let (name, takes_connection, takes_holding) = match &cli.command {
        Command::Elect {
            listen: false,
            json,
            count,
            ..
        } if *json || count.is_some() => {
            let option = if *json { "--json" } else { "--count" };
            return Err(Failure::new(
                status::USAGE,
                format!("{option} applies to `zklock elect --listen PATH` only (see zklock elect --help)"),
            ));
        }
        Command::Exec { .. } | Command::Elect { .. } => return Ok(()),
        Command::Ls { .. } => ("ls", true, false),
        Command::Check { .. } => ("check", true, false),
        Command::Revoke { .. } => ("revoke", true, false),
        Command::Break { .. } => ("break", true, false),
        Command::Server { .. } => ("server", false, false),
        Command::CheckLog { .. } => ("check-log", false, false),
    };
    let given = [
        (
            "--servers",
            cli.connection.servers.is_some(),
            takes_connection,
        ),
        (
            "--connect-timeout",
            cli.connection.connect_timeout.is_some(),
            takes_connection,
        ),
        (
            "--session-timeout",
            cli.holding.session_timeout.is_some(),
            takes_holding,
        ),
        (
            "--server-tick",
            cli.holding.server_tick.is_some(),
            takes_holding,
        ),
        ("--timeout", cli.holding.timeout.is_some(), takes_holding),
        ("--identity", cli.holding.identity.is_some(), takes_holding),
    ];
    match given.iter().find(|(_, set, applies)| *set && !applies) {
        Some((option, _, _)) => Err(Failure::new(
            status::USAGE,
            format!("{option} does not apply to `zklock {name}` (see zklock {name} --help)"),
        )),
        None => Ok(()),
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command while holding the lock at PATH: zklock exec PATH -- CMD [ARGS...]
    ///
    /// The command sees ZKLOCK_TOKEN (the fencing token: strictly increasing from one holder to
    /// the next), ZKLOCK_PATH (the lock path) and ZKLOCK_NODE (our lock node). The lock is
    /// released when the command exits, and zklock exits with the command's status. If the lock
    /// is lost while the command runs (session expired, node deleted, no server contact for the
    /// session timeout), the command gets SIGTERM, then SIGKILL after --kill-after (on Windows
    /// its job object is ended at once), and zklock exits with status 76. SIGINT, SIGTERM and SIGHUP sent to zklock are passed on to the command
    /// (a Ctrl-C at the terminal reaches it directly); while still waiting for the lock they stop
    /// the wait and leave no node behind.
    Exec {
        /// The lock path, e.g. /locks/nightly
        path: String,
        /// Take the shared (read) side of a read/write lock on PATH.
        #[arg(long, conflicts_with = "write")]
        read: bool,
        /// Take the exclusive (write) side of a read/write lock on PATH.
        #[arg(long)]
        write: bool,
        /// Take one lease of a semaphore of N leases on PATH (Curator's InterProcessSemaphoreV2
        /// layout: PATH/leases, PATH/locks): up to N commands run at once (as `consul lock -n`).
        /// Every user of PATH must give the same N. -n 1 excludes Curator's
        /// InterProcessSemaphoreMutex.
        #[arg(short = 'n', long = "leases", value_name = "N", conflicts_with_all = ["read", "write"])]
        leases: Option<u32>,
        /// Do not wait: exit at once with status 75 when the lock is held.
        #[arg(long = "try")]
        try_lock: bool,
        /// When the command ends, print how long the lock was waited for and held (and the
        /// client's other lock statistics) on stderr.
        #[arg(long)]
        stats: bool,
        /// Grace period between SIGTERM and SIGKILL when the lock is lost.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
        kill_after: Duration,
        /// Hold the lock at most this long: then the core ends the lease (lost, reason
        /// max-hold, node deleted) and the command is stopped as on any loss (status 76).
        /// With --read or --write it bounds the side taken; with -n, the lease.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        max_hold: Option<Duration>,
        /// Chubby's lock-delay (a mutex or -n): when the holder before us went without a clean
        /// release (its session expired, it was broken), run the command only this long after.
        /// A clean release by a holder with the same --lock-delay hands over at once.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        lock_delay: Option<Duration>,
        #[command(flatten)]
        connection: Connection,
        #[command(flatten)]
        holding: Holding,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Run a command while leader of the election at PATH: zklock elect PATH -- CMD [ARGS...]
    ///
    /// Waits to lead (Curator's LeaderLatch layout by default), then runs the command with
    /// ZKLOCK_LEADER=1, ZKLOCK_LEADER_ID (our id), ZKLOCK_TOKEN (the fencing token),
    /// ZKLOCK_NODE and ZKLOCK_PATH, as exec does: resigns when it exits and exits with its
    /// status; if the leadership is lost the command gets SIGTERM (SIGKILL after --kill-after;
    /// on Windows its job object is ended at once)
    /// and zklock exits 76. With --requeue it runs for leader again after each exit or loss,
    /// until a signal. Exit 78 when the path holds another layout's nodes. With --listen PATH:
    /// print the leader's id (or `none`) now and at every change.
    #[command(verbatim_doc_comment)]
    Elect {
        /// The election path, e.g. /elections/scheduler
        path: String,
        /// Print the leader now and at every change (`none` when nobody leads), one line each,
        /// until interrupted. Takes no command.
        #[arg(long, conflicts_with_all = ["id", "style", "requeue", "max_hold", "lock_delay", "command"])]
        listen: bool,
        /// With --listen: one JSON object per line (id, node, token, session_id, style,
        /// library, kind; null when nobody leads).
        #[arg(long)]
        json: bool,
        /// With --listen: exit 0 after N lines.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        /// Our participant id (the node's data, what `zklock ls` and other participants show).
        /// Default: --identity (host/pid).
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        id: Option<String>,
        /// The node layout: latch (Curator's LeaderLatch), selector (Curator's
        /// LeaderSelector) or kazoo (kazoo's Election). Every participant on PATH must use the
        /// same one. Default: latch (the core's default).
        #[arg(long, value_name = "STYLE", value_parser = parse_style)]
        style: Option<zklock::ElectionStyle>,
        /// After the command exits or the leadership is lost, resign and run for leader again
        /// at the tail of the queue, and run the command again when leading; until SIGINT,
        /// SIGTERM or SIGHUP.
        #[arg(long)]
        requeue: bool,
        /// Grace period between SIGTERM and SIGKILL when the leadership is lost.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
        kill_after: Duration,
        /// Lead at most this long each time: then the core ends the leadership (lost, reason
        /// max-hold) and the command is stopped as on any loss.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        max_hold: Option<Duration>,
        /// Chubby's lock-delay: when the leader before us went without resigning cleanly (its
        /// session expired, it was broken), lead only this long after. A clean resign by a
        /// leader with the same --lock-delay hands over at once.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        lock_delay: Option<Duration>,
        #[command(flatten)]
        connection: Connection,
        #[command(flatten)]
        holding: Holding,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "listen", value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Exit 0 if TOKEN is the fencing token of a current holder of the lock, or leader of the
    /// election, at PATH (Chubby's CheckSequencer), 1 if not.
    Check {
        /// The lock or election path.
        path: String,
        /// The fencing token to check (ZKLOCK_TOKEN of an exec or elect).
        #[arg(allow_hyphen_values = true)]
        token: i64,
        /// The semaphore's N: only the first N lease nodes count (default: every lease node).
        #[arg(short = 'n', long = "max-leases", value_name = "N")]
        max_leases: Option<u32>,
        /// Print nothing; the exit status says it.
        #[arg(short, long)]
        quiet: bool,
        #[command(flatten)]
        connection: Connection,
    },
    /// List the lock's holder(s) and queue in order: node, library (zklock, curator, kazoo,
    /// go-zookeeper), kind (mutex, read, write), identity, fencing token, session id.
    Ls {
        /// The lock path, e.g. /locks/nightly
        path: String,
        /// Print JSON for scripts instead of a table.
        #[arg(long, conflicts_with = "watch")]
        json: bool,
        /// Keep watching: redraw the queue when it changes (and every second on a terminal,
        /// for how long each contender has held or waited), until Ctrl-C.
        #[arg(long, conflicts_with = "recursive")]
        watch: bool,
        /// Every lock and election under PATH (PATH included; zklock, Curator and kazoo
        /// layouts, semaphores too): one line per holder, with its node's age. `/` walks the
        /// whole tree.
        #[arg(short = 'r', long)]
        recursive: bool,
        /// With -r: only holders whose node is at least DURATION old (its ctime, stamped by the
        /// ZooKeeper leader's clock, against this machine's clock; waiting time included).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "recursive")]
        held_over: Option<Duration>,
        /// With -r: how many levels below PATH to list (more is an error, status 64).
        #[arg(long, value_name = "N", default_value_t = 32, requires = "recursive")]
        max_depth: u32,
        /// With -r: how many nodes to list in all (more is an error, status 64).
        #[arg(
            long,
            value_name = "N",
            default_value_t = 100_000,
            requires = "recursive"
        )]
        max_nodes: usize,
        #[command(flatten)]
        connection: Connection,
    },
    /// Ask the holder(s) of PATH to let go (Curator's revocation): sets the data of each holder's
    /// node to __REVOKE__, which Curator's RevocationListener and zklock's revocation handlers
    /// hear. Without NODE: the current holder, or every lease of a semaphore. Prints the nodes
    /// asked. Exit status 3 when nobody holds PATH or NODE is gone.
    Revoke {
        /// The lock path, e.g. /locks/nightly
        path: String,
        /// One node to ask (its name, as `zklock ls` shows it, or its full path).
        node: Option<String>,
        #[command(flatten)]
        connection: Connection,
    },
    /// Break a stuck lock: delete one holder's node (checked against the version just read, so
    /// a node changed meanwhile is not touched). Shows the holder (node, token, identity,
    /// session, age) and refuses (status 64) unless NODE is named, or --holder comes with
    /// --token or --if-older-than (so that the same command run again cannot break the next
    /// holder); the refusal prints the exact command to break the holder shown. A Curator or
    /// kazoo holder cannot notice a break: breaking one needs --force. Prints the broken
    /// token; a zklock holder's lease turns lost with reason `broken` and its `zklock exec`
    /// command gets SIGTERM (status 76).
    Break {
        /// The lock path, e.g. /locks/nightly
        path: String,
        /// The node to delete (its name, as `zklock ls` shows it, or its full path).
        node: Option<String>,
        /// Break the current holder without naming its node; needs --token or --if-older-than.
        #[arg(long)]
        holder: bool,
        /// Break only if the holder's (or NODE's) token is T: a later holder has another.
        #[arg(long, value_name = "T")]
        token: Option<i64>,
        /// Break only a holder whose node is older than DURATION (e.g. 2h).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        if_older_than: Option<Duration>,
        /// Break a holder that cannot notice it (Curator, kazoo, another library): that
        /// process goes on believing it holds the lock.
        #[arg(long)]
        force: bool,
        /// Why: logged on stderr and in the core's logs.
        #[arg(long, value_name = "TEXT", required = true)]
        reason: String,
        #[command(flatten)]
        connection: Connection,
    },
    /// Start, stop or query the local single-node ZooKeeper (Debian's `zookeeper` package,
    /// installed when missing). Data lives under $ZKLOCK_SERVER_DIR, else
    /// $XDG_DATA_HOME/zklock/server, else ~/.local/share/zklock/server.
    Server {
        #[command(subcommand)]
        action: ServerAction,
    },
    /// Check a critical-section log (lines `<face> <token> <enter_ns> <exit_ns>`): no two
    /// sections overlap and tokens strictly increase in entry order. Used by the demo.
    CheckLog {
        /// Log files (read together).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Fail unless exactly N sections are logged.
        #[arg(long, value_name = "N")]
        expect: Option<usize>,
        /// Print every section in entry order first.
        #[arg(long)]
        timeline: bool,
    },
}

#[derive(Subcommand, Debug, Clone, Copy)]
pub enum ServerAction {
    /// Start the local ZooKeeper (no-op if it runs); prints its connect string on stdout.
    Start {
        /// Serve on this port (status 69 when it is taken, or when the server runs on another
        /// one). Without it: the port it had last, else 2181, else a free one.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        port: Option<u16>,
    },
    /// Stop the local ZooKeeper.
    Stop,
    /// Print whether the local ZooKeeper runs (status 0) or not (status 3).
    Status,
}

/// `--style`: the core's names (its error lists them).
fn parse_style(text: &str) -> Result<zklock::ElectionStyle, String> {
    text.parse::<zklock::ElectionStyle>()
        .map_err(|e| one_line(e.message()))
}

/// `--timeout` as given: at most this long, or `None` for forever.
#[derive(Debug, Clone, Copy)]
pub struct Timeout(pub Option<Duration>);

/// `--timeout`: a bare number of seconds by the core's rule (`zklock::Wait::from_secs`: -1 and
/// inf are forever, huge is forever, other negatives and NaN are refused), or a duration with a
/// unit, which is never negative.
fn parse_timeout(text: &str) -> Result<Timeout, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return match zklock::Wait::from_secs(Some(secs)) {
            Ok(zklock::Wait::Forever) => Ok(Timeout(None)),
            Ok(_) => Duration::try_from_secs_f64(secs)
                .map(|d| Timeout(Some(d)))
                .map_err(|_| format!("{t:?} is out of range")),
            Err(e) => Err(format!(
                "{}; use 0 to try once, or -1 (or leave --timeout out) to wait forever",
                e.message()
            )),
        };
    }
    if t.starts_with('-') {
        return Err(format!(
            "a timeout cannot be negative (got {text:?}); use 0 to try once, or leave --timeout out to wait forever"
        ));
    }
    parse_duration(text).map(|d| Timeout(Some(d)))
}

/// `500ms`, `10s`, `1.5s`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("a duration cannot be negative (got {text:?})"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try 500ms, 10s, 2m)"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (use ms, s, m or h)"
            ))
        }
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("{text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1")
            .unwrap_err()
            .contains("cannot be negative"));
        assert!(parse_timeout("-1s")
            .unwrap_err()
            .contains("timeout cannot be negative"));
        assert_eq!(parse_timeout("0").unwrap().0, Some(Duration::ZERO));
        assert_eq!(
            parse_timeout("1.5").unwrap().0,
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_timeout("-1").unwrap().0, None, "-1 waits forever");
        assert_eq!(parse_timeout("inf").unwrap().0, None);
        assert_eq!(
            parse_timeout("1e300").unwrap().0,
            None,
            "huge waits forever"
        );
        assert!(parse_timeout("nan").is_err());
        assert!(parse_timeout("-2").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
