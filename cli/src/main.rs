//! `zklock`: run a command under a ZooKeeper lock, list a lock's queue, run a local ZooKeeper.
//!
//! This file parses the command line and dispatches to one module per command. The rooms, from
//! the bottom up (cli/layers.txt): `status` (what every command prints and exits with), `args`
//! (the command line as clap parses it), `server` (the local ZooKeeper, also where the other
//! commands find one by default), `settings` (the options in force, and the connect), `child`
//! (the command that exec and elect run, as a process, per platform) with `watchdog` (what
//! stops it at the lease's deadline while zklock itself is stopped), then the commands.

use std::ffi::OsString;

use clap::Parser;

mod args;
mod breaking;
mod check;
mod child;
mod elect;
mod exec;
mod ls;
mod ls_tree;
mod server;
mod settings;
mod status;
#[cfg(unix)]
mod watchdog;

use args::{refuse_unused, Cli, Command};
use settings::Settings;
use status::Failure;

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
    let is_elect = args.iter().skip(1).any(|a| a == "elect");
    let listens = args.iter().any(|a| a == "--listen");
    let has_dashes = args.iter().any(|a| a == "--");
    if is_exec && !has_dashes {
        eprintln!(
            "zklock: exec needs `--` between the lock path and the command: zklock exec PATH -- CMD [ARGS...]"
        );
        return status::USAGE;
    }
    if is_elect && !listens && !has_dashes {
        eprintln!(
            "zklock: elect needs `--` between the election path and the command: zklock elect PATH -- CMD [ARGS...] (or zklock elect --listen PATH)"
        );
        return status::USAGE;
    }
    // clap's first paragraph, as one line (it may list missing arguments on the next lines).
    // clap quotes the argument it stumbled on: never one that looks like key material (a PEM
    // given where no option takes it, issue 27 point 5).
    let mut rendered = e.render().to_string();
    for arg in args.iter().skip(1).map(|a| a.to_string_lossy()) {
        if zklock::support::looks_like_key_material(&arg) {
            rendered = rendered.replace(&*arg, "<an argument that looks like key material>");
        }
    }
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
    refuse_unused(&cli)?;
    match &cli.command {
        Command::Server { action } => server::run(*action),
        Command::CheckLog {
            files,
            expect,
            timeline,
        } => check::run(files, *expect, *timeline),
        Command::Exec { .. }
        | Command::Elect { .. }
        | Command::Check { .. }
        | Command::Ls { .. }
        | Command::Revoke { .. }
        | Command::Break { .. } => {
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
                        leases,
                        try_lock,
                        kill_after,
                        max_hold,
                        lock_delay,
                        stats,
                        connection,
                        holding,
                        command,
                    } => {
                        exec::run(
                            &Settings::new(&cli, connection, Some(holding)),
                            exec::Args {
                                path,
                                side: if let Some(n) = leases {
                                    exec::Side::Semaphore(*n)
                                } else if *read {
                                    exec::Side::Read
                                } else if *write {
                                    exec::Side::Write
                                } else {
                                    exec::Side::Mutex
                                },
                                try_lock: *try_lock,
                                kill_after: *kill_after,
                                stats: *stats,
                                max_hold: *max_hold,
                                lock_delay: *lock_delay,
                                command,
                            },
                        )
                        .await
                    }
                    Command::Elect {
                        path,
                        listen: true,
                        json,
                        count,
                        connection,
                        holding,
                        ..
                    } => {
                        elect::listen(
                            &Settings::new(&cli, connection, Some(holding)),
                            path,
                            *json,
                            *count,
                        )
                        .await
                    }
                    Command::Elect {
                        path,
                        id,
                        style,
                        requeue,
                        kill_after,
                        max_hold,
                        lock_delay,
                        connection,
                        holding,
                        command,
                        ..
                    } => {
                        elect::run(
                            &Settings::new(&cli, connection, Some(holding)),
                            elect::Args {
                                path,
                                style: style.unwrap_or_default(),
                                id: id.as_deref(),
                                requeue: *requeue,
                                kill_after: *kill_after,
                                max_hold: *max_hold,
                                lock_delay: *lock_delay,
                                command,
                            },
                        )
                        .await
                    }
                    Command::Check {
                        path,
                        token,
                        max_leases,
                        quiet,
                        connection,
                    } => {
                        elect::check(
                            &Settings::new(&cli, connection, None),
                            path,
                            *token,
                            *max_leases,
                            *quiet,
                        )
                        .await
                    }
                    Command::Ls {
                        path,
                        watch: true,
                        connection,
                        ..
                    } => ls::watch(&Settings::new(&cli, connection, None), path).await,
                    Command::Ls {
                        path,
                        json,
                        recursive: true,
                        held_over,
                        max_depth,
                        max_nodes,
                        connection,
                        ..
                    } => {
                        let limits = zklock::ScanLimits {
                            max_depth: *max_depth,
                            max_nodes: *max_nodes,
                        };
                        let over = held_over.unwrap_or_default();
                        let settings = Settings::new(&cli, connection, None);
                        ls_tree::run(&settings, path, over, limits, *json).await
                    }
                    Command::Ls {
                        path,
                        json,
                        connection,
                        ..
                    } => ls::run(&Settings::new(&cli, connection, None), path, *json).await,
                    Command::Revoke {
                        path,
                        node,
                        connection,
                    } => {
                        ls::revoke(
                            &Settings::new(&cli, connection, None),
                            path,
                            node.as_deref(),
                        )
                        .await
                    }
                    Command::Break {
                        path,
                        node,
                        holder,
                        token,
                        if_older_than,
                        force,
                        reason,
                        connection,
                    } => {
                        let wanted = breaking::Wanted {
                            node: node.as_deref(),
                            holder: *holder,
                            token: *token,
                            older_than: *if_older_than,
                            force: *force,
                        };
                        breaking::run(&Settings::new(&cli, connection, None), path, wanted, reason)
                            .await
                    }
                    _ => unreachable!(),
                }
            })
        }
    }
}
