//! `zklock`: run a command under a ZooKeeper lock, list a lock's queue, run a local ZooKeeper.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Parser, Subcommand};

mod check;
mod exec;
mod ls;
mod server;
mod status;

use status::{Failure, EXIT_STATUS_HELP};

#[derive(Parser, Debug)]
#[command(
    name = "zklock",
    version,
    about = "Distributed locks on Apache ZooKeeper: run a command under a lock, list a lock's queue, run a local ZooKeeper",
    after_help = EXIT_STATUS_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// ZooKeeper connect string (host:port[,host:port...][/chroot]). Default: $ZKLOCK_SERVERS,
    /// else the local server that `zklock server start` runs.
    #[arg(long, global = true, value_name = "HOSTS")]
    pub servers: Option<String>,

    /// Session timeout asked of the server: how long a silent holder keeps the lock.
    /// Durations take a unit: 500ms, 10s, 2m (a bare number is seconds).
    #[arg(long, global = true, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub session_timeout: Duration,

    /// How long to wait for the lock (exec); default: forever. 0 is the same as --try.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// How long to keep trying to reach a ZooKeeper server before giving up.
    #[arg(long, global = true, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Identity written into our lock node (shown by `zklock ls`). Default: host/pid.
    #[arg(long, global = true, value_name = "TEXT")]
    pub identity: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command while holding the lock at PATH: zklock exec PATH -- CMD [ARGS...]
    ///
    /// The command sees ZKLOCK_TOKEN (the fencing token: strictly increasing from one holder to
    /// the next), ZKLOCK_PATH (the lock path) and ZKLOCK_NODE (our lock node). The lock is
    /// released when the command exits, and zklock exits with the command's status. If the lock
    /// is lost while the command runs (session expired, node deleted, no server contact for the
    /// session timeout), the command gets SIGTERM, then SIGKILL after --kill-after, and zklock
    /// exits with status 76. SIGINT, SIGTERM and SIGHUP sent to zklock are passed on to the command
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
        /// Do not wait: exit at once with status 75 when the lock is held.
        #[arg(long = "try")]
        try_lock: bool,
        /// Grace period between SIGTERM and SIGKILL when the lock is lost.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
        kill_after: Duration,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// List the lock's holder(s) and queue in order: node, library (zklock, curator, kazoo,
    /// go-zookeeper), kind (mutex, read, write), identity, fencing token, session id.
    Ls {
        /// The lock path, e.g. /locks/nightly
        path: String,
        /// Print JSON for scripts instead of a table.
        #[arg(long)]
        json: bool,
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
    #[command(hide = true)]
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
    Start,
    /// Stop the local ZooKeeper.
    Stop,
    /// Print whether the local ZooKeeper runs (status 0) or not (status 3).
    Status,
}

/// `500ms`, `10s`, `1.5s`, `2m`, `1h`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
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

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        eprintln!(
            "zklock: internal error: {} (at {})",
            msg.lines().next().unwrap_or(""),
            info.location().map(|l| l.to_string()).unwrap_or_default()
        );
        std::process::exit(status::SOFTWARE);
    }));
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => std::process::exit(usage_error(e, &args)),
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("zklock: {}", failure.message);
            failure.status
        }
    };
    std::process::exit(code);
}

/// Prints a clap error as one line (help and version print in full).
fn usage_error(e: clap::Error, args: &[OsString]) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                status::USAGE
            } else {
                0
            };
        }
        _ => {}
    }
    let is_exec = args.iter().skip(1).any(|a| a == "exec");
    let has_dashes = args.iter().any(|a| a == "--");
    if is_exec && !has_dashes {
        eprintln!(
            "zklock: exec needs `--` between the lock path and the command: zklock exec PATH -- CMD [ARGS...]"
        );
        return status::USAGE;
    }
    // clap's first paragraph, as one line (it may list missing arguments on the next lines).
    let rendered = e.render().to_string();
    let paragraph: Vec<&str> = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = paragraph.join(" ");
    let line = line.trim_start_matches("error: ");
    let line = if line.is_empty() {
        "bad arguments"
    } else {
        line
    };
    eprintln!("zklock: {line} (see zklock --help)");
    status::USAGE
}

fn run(cli: Cli) -> Result<i32, Failure> {
    match &cli.command {
        Command::Server { action } => server::run(*action),
        Command::CheckLog {
            files,
            expect,
            timeline,
        } => check::run(files, *expect, *timeline),
        Command::Exec { .. } | Command::Ls { .. } => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::software(format!("cannot start the runtime: {e}")))?;
            runtime.block_on(async {
                match &cli.command {
                    Command::Exec {
                        path,
                        read,
                        write,
                        try_lock,
                        kill_after,
                        command,
                    } => {
                        exec::run(
                            &cli,
                            exec::Args {
                                path,
                                side: if *read {
                                    exec::Side::Read
                                } else if *write {
                                    exec::Side::Write
                                } else {
                                    exec::Side::Mutex
                                },
                                try_lock: *try_lock,
                                kill_after: *kill_after,
                                command,
                            },
                        )
                        .await
                    }
                    Command::Ls { path, json } => ls::run(&cli, path, *json).await,
                    _ => unreachable!(),
                }
            })
        }
    }
}

/// The servers to talk to: --servers, $ZKLOCK_SERVERS, else the local server if it runs.
pub fn servers(cli: &Cli) -> Result<String, Failure> {
    if let Some(s) = cli.servers.as_deref().filter(|s| !s.trim().is_empty()) {
        return Ok(s.to_owned());
    }
    if let Ok(s) = std::env::var("ZKLOCK_SERVERS") {
        if !s.trim().is_empty() {
            return Ok(s);
        }
    }
    server::local_servers()
}

/// Connects with the command line's options; the lock path is checked first (no network).
pub async fn connect(cli: &Cli, path: &str) -> Result<zklock::Client, Failure> {
    zklock::protocol::validate_path(path).map_err(Failure::from)?;
    let servers = servers(cli)?;
    let mut options = zklock::Options::default()
        .session_timeout(cli.session_timeout)
        .connect_timeout(cli.connect_timeout);
    if let Some(id) = &cli.identity {
        options = options.identity(id.clone());
    }
    zklock::Client::connect(&servers, options)
        .await
        .map_err(Failure::from)
}

pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
